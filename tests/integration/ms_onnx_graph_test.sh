#!/usr/bin/env bash
# ms_onnx_graph_test - the export of every architecture against the layer
# contract, before the engine trains residual or normalised networks:
# ms_onnx_synth writes models with random parameters (plain and residual;
# no norm, layer and batch norm; scale 1 and rezero; blocks of one and two
# layers with a remainder; every activation; each input scaling), and
# onnx_contract.py checks each with onnx.checker and compares its graph,
# evaluated with numpy, with the network computed from the contract.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3
$PY -c 'import onnx, numpy' 2>/dev/null ||
    { echo "python3-onnx or python3-numpy not installed: skipped"; exit 77; }
SYNTH=${MESHSWEEP_ONNX_SYNTH:?}
files=()
i=0
# ARCH NORM RESIDUAL_SCALE ACTIVATION SCALE N_HIDDEN WIDTH BLOCK_LAYERS
while read -r arch norm rs act scale nh w bl; do
    i=$((i + 1))
    "$SYNTH" "$T/m$i.onnx" "$arch" "$norm" "$rs" "$act" "$scale" "$nh" "$w" "$bl" 12 5 "$i" ||
        fail "ms_onnx_synth $arch $norm $rs $act $scale $nh $w $bl"
    files+=("$T/m$i.onnx")
done <<'L'
plain none 1 relu unit 3 8 1
plain layer 1 tanh standard 3 8 1
plain batch 1 gelu none 2 8 1
residual none 1 relu unit 4 8 1
residual layer 1 relu standard 6 8 2
residual layer rezero gelu unit 5 8 2
residual batch rezero selu standard 4 8 1
residual batch 1 leaky_relu unit 7 6 2
residual layer rezero elu unit 1 8 2
residual none rezero sigmoid none 3 8 1
plain none 1 linear unit 0 8 1
L
$PY "$HERE/onnx_contract.py" "${files[@]}" >"$T/contract.out" ||
    { cat "$T/contract.out"; fail "a graph differs from the contract"; }
cat "$T/contract.out"
ok "${#files[@]} architectures: each graph passes the checker and computes the contract"
