#!/usr/bin/env bash
# pass always succeeds, so "CHECK && pass || fail" is an if-then-else.
# shellcheck disable=SC2015
# package-test.sh - build the Debian package with cpack, install it on this
# machine, check what it installed, remove it, purge it, and leave the
# machine as it found it (docs/PACKAGING.md). Runs as root (CI does, in
# tools/test.sh); exits 0 with a skip line otherwise.
#
# Usage: tools/package-test.sh [BUILD_DIR]   (default build-ci; configured
#        Release with CMAKE_INSTALL_PREFIX=/usr and built here if needed)
#
# It checks: the .deb's name and files; dpkg -i (then apt-get install -f
# when dependencies are missing); /usr/bin/meshsweepd --version, meshsweep
# --help; the three man pages through man(1); systemd-analyze verify of
# the unit; the system user and /var/lib/meshsweep; the unit enabled for
# boot; the config file read by meshsweepd started as the user (loopback,
# no beacon, a temporary data dir) and the installed dashboard served;
# reinstalling (the upgrade path) keeps an edited config; dpkg -r keeps the
# config and the data, dpkg -P deletes the config and keeps the data. Then it removes what the package leaves by design (the
# user, /var/lib/meshsweep) when they were not there before, and compares
# the machine's state with the state it started from.
# The package must not be installed already (a real installation is never
# touched). Runs in about a minute after a Release build.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"

if [ "$(id -u)" -ne 0 ]; then
    echo "package-test.sh: SKIPPED: needs root (dpkg -i); run it as root"
    exit 0
fi
for cmd in cpack dpkg dpkg-deb dpkg-shlibdeps man systemd-analyze adduser \
    setpriv curl; do
    if ! command -v "$cmd" >/dev/null; then
        echo "package-test.sh: FAILED: $cmd is not installed" >&2
        exit 1
    fi
done

build=${1:-build-ci}
pkg=meshsweep
unit=meshsweepd.service
conf=/etc/meshsweep/meshsweepd.conf
state=/var/lib/meshsweep
t0=$(date +%s)
fails=0
pass() { echo "  ok   $*"; }
fail() {
    echo "  FAIL $*"
    fails=$((fails + 1))
}
check() { # check DESCRIPTION COMMAND...: ok when the command succeeds
    local what=$1
    shift
    if "$@" >/dev/null 2>&1; then pass "$what"; else fail "$what"; fi
}

if dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q -v 'not-installed'; then
    echo "package-test.sh: FAILED: the package $pkg is installed on this machine" \
        "($(dpkg-query -W -f='${Status}' "$pkg")); this test would remove it" >&2
    exit 1
fi

# ---- the machine's state before, to leave it as found ---------------------
snapshot() {
    {
        getent passwd meshsweep || true
        getent group meshsweep || true
        ls -ld /etc/meshsweep "$state" 2>/dev/null || true
        find /etc/systemd/system /var/lib/systemd/deb-systemd-helper-enabled \
            /var/lib/systemd/deb-systemd-helper-masked -name '*meshsweep*' \
            2>/dev/null | sort || true
        ls /usr/bin/meshsweep /usr/bin/meshsweepd /lib/systemd/system/$unit \
            /usr/share/meshsweep 2>/dev/null || true
        dpkg-query -W -f='${Package} ${Status}\n' | grep ' installed$' | sort
    }
}
before=$(mktemp /tmp/ms-package-test.before.XXXXXX)
snapshot >"$before"
had_user=0
getent passwd meshsweep >/dev/null && had_user=1
had_group=0
getent group meshsweep >/dev/null && had_group=1
had_state=0
[ -e "$state" ] && had_state=1
tmp=$(mktemp -d /tmp/ms-package-test.XXXXXX)
chmod 0755 "$tmp"
daemon_pid=

cleanup() {
    local rc=$?
    set +e
    if [ -n "$daemon_pid" ] && kill -0 "$daemon_pid" 2>/dev/null; then
        kill -TERM "$daemon_pid"
        sleep 2
        kill -KILL "$daemon_pid" 2>/dev/null
    fi
    if dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q -v 'not-installed'; then
        echo "cleanup: purging $pkg"
        dpkg -P "$pkg" >/dev/null 2>&1
    fi
    # What apt-get install -f pulled in, and nothing else.
    local added
    added=$(comm -13 <(grep ' installed$' "$before" | cut -d' ' -f1 | sort) \
        <(dpkg-query -W -f='${Package} ${Status}\n' | grep ' installed$' |
            cut -d' ' -f1 | sort))
    if [ -n "$added" ]; then
        echo "cleanup: purging what apt-get install -f added: $added"
        # shellcheck disable=SC2086
        DEBIAN_FRONTEND=noninteractive apt-get purge -y -q $added >/dev/null 2>&1
    fi
    # Kept by design on purge (docs/PACKAGING.md); not ours to keep here.
    if [ $had_user -eq 0 ] && getent passwd meshsweep >/dev/null; then
        userdel meshsweep
    fi
    if [ $had_group -eq 0 ] && getent group meshsweep >/dev/null; then
        groupdel meshsweep
    fi
    [ $had_state -eq 0 ] && rm -rf "$state"
    rm -rf "$tmp"
    local after
    after=$(mktemp /tmp/ms-package-test.after.XXXXXX)
    snapshot >"$after"
    if ! diff -u "$before" "$after" >"$tmp.diff" 2>&1; then
        echo "package-test.sh: the machine is not as it was found:"
        cat "$tmp.diff"
        [ $rc -eq 0 ] && rc=1
    else
        echo "  ok   the machine is as it was found (users, files, units, packages)"
    fi
    rm -f "$before" "$after" "$tmp.diff"
    exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- before building --------------------------------------------------------
# Docker's slim images tell dpkg to skip man pages: then `man` cannot work.
if grep -qs '^path-exclude=*/usr/share/man' /etc/dpkg/dpkg.cfg.d/*; then
    fail "dpkg is told to skip /usr/share/man here ($(grep -ls \
        '^path-exclude=*/usr/share/man' /etc/dpkg/dpkg.cfg.d/*)): the man pages" \
        "cannot be installed; remove that line"
fi
if command -v shellcheck >/dev/null; then
    check "shellcheck: packaging/debian/postinst, prerm, postrm" \
        shellcheck packaging/debian/postinst packaging/debian/prerm packaging/debian/postrm
else
    echo "  ..   shellcheck not installed: maintainer scripts not checked"
fi

# ---- build -----------------------------------------------------------------
echo "== package: build ($build, Release, CMAKE_INSTALL_PREFIX=/usr)"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=/usr \
    >/dev/null
cmake --build "$build" -j "$(nproc 2>/dev/null || echo 2)" >/dev/null
rm -rf "$build/package"
(cd "$build" && cpack -G DEB -B package >"$tmp/cpack.log" 2>&1) || {
    cat "$tmp/cpack.log"
    fail "cpack"
    exit 1
}
version=$(sed -n 's/^set(CPACK_PACKAGE_VERSION "\(.*\)")$/\1/p' "$build/CPackConfig.cmake")
arch=$(dpkg --print-architecture)
deb=$build/package/${pkg}_${version}_${arch}.deb
if [ -f "$deb" ]; then pass "cpack built $(basename "$deb") ($(du -k "$deb" | cut -f1) KiB)"; else
    fail "cpack: no $deb"
    exit 1
fi
contents=$(dpkg-deb -c "$deb" | awk '{print $6}')
for f in ./usr/bin/meshsweepd ./usr/bin/meshsweep ./lib/systemd/system/$unit \
    ./etc/meshsweep/meshsweepd.conf ./usr/share/man/man1/meshsweep.1.gz \
    ./usr/share/man/man5/meshsweep-sweep.5.gz ./usr/share/man/man8/meshsweepd.8.gz \
    ./usr/share/meshsweep/dashboard/index.html ./usr/share/doc/meshsweep/copyright \
    ./usr/share/doc/meshsweep/PACKAGING.md; do
    if grep -qx "$f" <<<"$contents"; then :; else fail "the package lacks $f"; fi
done
if grep -q -e '^./usr/sbin' -e '^./usr/local' <<<"$contents"; then
    fail "the package has files in /usr/sbin or /usr/local"
fi
pass "the package holds the programs, unit, config, man pages, dashboard, docs"
control=$(dpkg-deb -f "$deb")
grep -q '^Depends:.*adduser.*libczmq4' <<<"$control" &&
    pass "Depends: adduser and the libraries (dpkg-shlibdeps)" ||
    fail "Depends lacks adduser or the libraries: $(grep '^Depends' <<<"$control")"
[ "$(dpkg-deb --ctrl-tarfile "$deb" | tar -xO ./conffiles)" = "$conf" ] &&
    pass "conffiles: $conf" || fail "conffiles is not $conf"

# ---- install ---------------------------------------------------------------
echo "== package: install"
if dpkg -i "$deb" >"$tmp/dpkg-i.log" 2>&1; then
    pass "dpkg -i $(basename "$deb")"
else
    echo "  ..   dpkg -i reported missing dependencies: apt-get install -f -y"
    sed 's/^/       /' "$tmp/dpkg-i.log" | tail -5
    if DEBIAN_FRONTEND=noninteractive apt-get install -f -y -q >"$tmp/apt.log" 2>&1; then
        pass "apt-get install -f resolved the dependencies"
    else
        tail -20 "$tmp/apt.log"
        fail "apt-get install -f"
        exit 1
    fi
fi
[ "$(dpkg-query -W -f='${Status}' "$pkg")" = "install ok installed" ] &&
    pass "dpkg: install ok installed" || fail "dpkg status: $(dpkg-query -W -f='${Status}' "$pkg")"

got=$(/usr/bin/meshsweepd --version 2>&1) || true
[ "$got" = "meshsweepd $version" ] && pass "/usr/bin/meshsweepd --version: $got" ||
    fail "/usr/bin/meshsweepd --version: '$got'"
[ "$(command -v meshsweepd)" = /usr/bin/meshsweepd ] && pass "meshsweepd on PATH is /usr/bin/meshsweepd" ||
    fail "meshsweepd on PATH is '$(command -v meshsweepd)'"
/usr/bin/meshsweep --help >"$tmp/help" 2>&1 && grep -q '^usage: meshsweep .*COMMAND' "$tmp/help" &&
    pass "meshsweep --help" || fail "meshsweep --help"

while read -r section name; do
    if MANWIDTH=80 man -P cat "$section" "$name" >"$tmp/man" 2>"$tmp/man.err" &&
        grep -q "^NAME" "$tmp/man" && grep -q "^ *$name - " "$tmp/man"; then
        pass "man $section $name shows the page ($(wc -l <"$tmp/man") lines)"
    else
        fail "man $section $name: $(head -3 "$tmp/man.err")"
    fi
done <<EOF2
1 meshsweep
5 meshsweep-sweep
8 meshsweepd
EOF2
# Every option of meshsweepd --help is in meshsweepd(8).
MANWIDTH=200 man -P cat 8 meshsweepd >"$tmp/man8" 2>/dev/null || true
missing=""
for opt in $(/usr/bin/meshsweepd --help | grep -o -- '--[a-z][a-z-]*' | sort -u); do
    grep -q -- "$opt" "$tmp/man8" || missing="$missing $opt"
done
[ -z "$missing" ] && pass "meshsweepd(8) documents every option of meshsweepd --help" ||
    fail "meshsweepd(8) lacks:$missing"
# ... and the installed config lists each one (commented or not) as a key.
missing=""
for opt in $(/usr/bin/meshsweepd --help | grep -o -- '--[a-z][a-z-]*' | sort -u); do
    case $opt in --help | --version | --config | --check-config) continue ;; esac
    key=$(tr - _ <<<"${opt#--}")
    grep -Eq "^#?$key = " "$conf" || missing="$missing $key"
done
[ -z "$missing" ] && pass "$conf lists every option of meshsweepd --help" ||
    fail "$conf lacks the keys:$missing"
# The installed config as the service reads it, checked without starting.
if /usr/bin/meshsweepd --config "$conf" --check-config >"$tmp/check" 2>&1; then
    pass "meshsweepd --config $conf --check-config: $(grep -c ' = ' "$tmp/check") settings, exit 0"
else
    fail "meshsweepd --check-config refused $conf: $(tail -1 "$tmp/check")"
fi

if systemd-analyze verify /lib/systemd/system/$unit >"$tmp/verify" 2>&1 &&
    ! grep -q . "$tmp/verify"; then
    pass "systemd-analyze verify /lib/systemd/system/$unit: no complaint"
else
    fail "systemd-analyze verify: $(cat "$tmp/verify")"
fi
grep -q '^ExecStart=/usr/bin/meshsweepd --config /etc/meshsweep/meshsweepd.conf$' \
    /lib/systemd/system/$unit && pass "unit: ExecStart=/usr/bin/meshsweepd --config $conf" ||
    fail "unit: ExecStart"

user=$(getent passwd meshsweep || true)
if [ -n "$user" ] && [ "$(cut -d: -f6 <<<"$user")" = "$state" ] &&
    [ "$(cut -d: -f7 <<<"$user")" = /usr/sbin/nologin ] &&
    [ "$(cut -d: -f3 <<<"$user")" -lt 1000 ]; then
    pass "system user: $user"
else
    fail "system user meshsweep: '$user'"
fi
[ "$(stat -c '%U:%G %a' "$state" 2>/dev/null)" = "meshsweep:meshsweep 750" ] &&
    pass "$state: meshsweep:meshsweep 750" || fail "$state: $(stat -c '%U:%G %a' "$state" 2>&1)"
wants=/etc/systemd/system/multi-user.target.wants/$unit
[ "$(readlink "$wants")" = "/lib/systemd/system/$unit" ] &&
    pass "enabled for boot ($wants)" || fail "not enabled for boot: no $wants"
if [ -d /run/systemd/system ]; then
    echo "  ..   systemd runs here: the service was started by postinst"
else
    echo "  ..   no systemd running here: postinst enabled the unit, started nothing"
fi

# The config file as the service reads it, by meshsweepd as the user:
# loopback API, no beacon, a temporary data dir (the command line wins).
install -d -o meshsweep -g meshsweep -m 0700 "$tmp/data"
# setpriv execs meshsweepd itself (runuser would stay its parent).
setpriv --reuid meshsweep --regid meshsweep --init-groups /usr/bin/meshsweepd --config "$conf" \
    --data-dir "$tmp/data" --api 127.0.0.1:0 --mesh-port 0 --no-beacon \
    >"$tmp/daemon.out" 2>"$tmp/daemon.err" &
daemon_pid=$!
api=""
for _ in $(seq 1 100); do # at most 20 s
    api=$(sed -n 's|^meshsweepd: API http://\([0-9.:]*\)/api/v1$|\1|p' "$tmp/daemon.out" 2>/dev/null || true)
    [ -n "$api" ] && break
    kill -0 "$daemon_pid" 2>/dev/null || break
    sleep 0.2
done
if [ -n "$api" ]; then
    pass "meshsweepd read $conf as user meshsweep (API $api)"
    grep -q "(assets /usr/share/meshsweep/dashboard)" "$tmp/daemon.out" &&
        pass "meshsweepd serves the installed dashboard /usr/share/meshsweep/dashboard" ||
        fail "dashboard: $(grep dashboard "$tmp/daemon.out" "$tmp/daemon.err")"
    code=$(curl -s -o "$tmp/index.html" -w '%{http_code}' "http://$api/" || true)
    [ "$code" = 200 ] && cmp -s "$tmp/index.html" /usr/share/meshsweep/dashboard/index.html &&
        pass "GET / answers the installed index.html" || fail "GET /: HTTP $code"
    kill -TERM "$daemon_pid"
    rc=0
    wait "$daemon_pid" || rc=$?
    daemon_pid=
    [ $rc -eq 0 ] && pass "SIGTERM: meshsweepd stopped, exit 0" || fail "meshsweepd exit $rc on SIGTERM"
else
    fail "meshsweepd did not start with $conf: $(cat "$tmp/daemon.err")"
fi

# ---- upgrade (the same version again): an admin's config edit is kept -----
echo "== package: upgrade"
echo "# package-test: an admin's edit" >>"$conf"
dpkg -i "$deb" >"$tmp/dpkg-u.log" 2>&1 && pass "dpkg -i over the installed package (upgrade path)" ||
    fail "dpkg -i again: $(tail -5 "$tmp/dpkg-u.log")"
grep -q "^# package-test: an admin's edit$" "$conf" && pass "upgrade kept the edited $conf" ||
    fail "upgrade replaced the edited $conf"
[ "$(dpkg-query -W -f='${Status}' "$pkg")" = "install ok installed" ] &&
    [ "$(stat -c '%U' "$state")" = meshsweep ] && [ -L "$wants" ] &&
    pass "after the upgrade: installed, $state and the boot link as before" ||
    fail "after the upgrade: $(dpkg-query -W -f='${Status}' "$pkg"), $(ls -ld "$state" "$wants" 2>&1)"

# ---- remove and purge --------------------------------------------------------
echo "== package: remove, purge"
dpkg -r "$pkg" >"$tmp/dpkg-r.log" 2>&1 && pass "dpkg -r $pkg" || fail "dpkg -r: $(cat "$tmp/dpkg-r.log")"
[ ! -e /usr/bin/meshsweepd ] && [ ! -e /usr/bin/meshsweep ] && [ ! -e /lib/systemd/system/$unit ] &&
    [ ! -e /usr/share/meshsweep ] && pass "removed: the programs, the unit, the dashboard" ||
    fail "dpkg -r left the programs, unit or dashboard"
[ -f "$conf" ] && pass "kept on remove: $conf" || fail "dpkg -r removed $conf"
[ -d "$state" ] && pass "kept on remove: $state" || fail "dpkg -r removed $state"
[ "$(dpkg-query -W -f='${Status}' "$pkg")" = "deinstall ok config-files" ] &&
    pass "dpkg: deinstall ok config-files" || fail "dpkg status: $(dpkg-query -W -f='${Status}' "$pkg")"
dpkg -P "$pkg" >"$tmp/dpkg-p.log" 2>&1 && pass "dpkg -P $pkg" || fail "dpkg -P: $(cat "$tmp/dpkg-p.log")"
[ ! -e "$conf" ] && [ ! -e /etc/meshsweep ] && pass "purged: $conf and /etc/meshsweep" ||
    fail "dpkg -P left $(ls -d /etc/meshsweep "$conf" 2>/dev/null)"
[ -d "$state" ] && getent passwd meshsweep >/dev/null &&
    pass "kept on purge, by design: $state and the user meshsweep" ||
    fail "dpkg -P removed $state or the user"
left=$(find /etc/systemd/system /var/lib/systemd/deb-systemd-helper-enabled \
    /var/lib/systemd/deb-systemd-helper-masked -name '*meshsweep*' 2>/dev/null || true)
[ -z "$left" ] && pass "purged: no enable links or masks left" || fail "left after purge: $left"
! dpkg-query -W "$pkg" >/dev/null 2>&1 && pass "dpkg knows no $pkg any more" ||
    fail "dpkg still knows $pkg: $(dpkg-query -W -f='${Status}' "$pkg")"

echo "== package: $fails failure(s), $(($(date +%s) - t0)) s"
[ $fails -eq 0 ]
