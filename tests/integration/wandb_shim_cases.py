"""Cases for meshsweep's wandb module (node/programs/python/wandb): each
runs a W&B-style script in a fresh /usr/bin/python3 with the module first on
PYTHONPATH and checks the JSON lines it wrote to $MESHSWEEP_METRICS."""
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

SHIM = os.path.join(os.environ["MESHSWEEP_SOURCE_DIR"], "node", "programs", "python")


def run(script, sweep=None, args=()):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "train.py")
        with open(path, "w") as f:
            f.write(textwrap.dedent(script))
        metrics = os.path.join(d, "metrics.jsonl")
        env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": SHIM, "MESHSWEEP_METRICS": metrics,
               "WANDB_RUN_ID": "run-7", "WANDB_SWEEP_ID": "sweep-1"}
        if sweep is not None:
            env["MESHSWEEP_CONFIG"] = json.dumps(sweep)
        p = subprocess.run(["/usr/bin/python3", path, *args], env=env, cwd=d,
                           capture_output=True, text=True, timeout=60)
        lines = []
        if os.path.exists(metrics):
            with open(metrics) as f:
                lines = [json.loads(l) for l in f]
        return p, lines


class ShimTest(unittest.TestCase):
    def test_sweep_values_over_defaults(self):
        p, lines = run("""
            import wandb
            run = wandb.init(config={"lr": 0.1, "opt": "sgd", "net": {"w": 64, "d": 2}})
            c = wandb.config
            print(c.lr, c["opt"], c.net, run.id, run.sweep_id, "lr" in c)
            c.update({"lr": 5, "extra": 1})
            """, sweep={"lr": 0.001, "net": {"w": 128}})
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout.split("\n")[0],
                         "0.001 sgd {'w': 128, 'd': 2} run-7 sweep-1 True")
        self.assertEqual(lines[0], {"_config": {"lr": 0.001, "net": {"w": 128, "d": 2},
                                                "opt": "sgd"}})
        # the sweep's lr stands; the new key is recorded
        self.assertIn({"_config": {"extra": 1}}, lines)

    def test_history_summary_and_finish(self):
        p, lines = run("""
            import wandb
            wandb.init()
            wandb.define_metric("val_loss", summary="min")
            for i, v in enumerate([0.5, 0.3, 0.4]):
                wandb.log({"val_loss": v, "acc": i / 10})
            wandb.log({"a": 1}, commit=False)
            wandb.log({"b": 2})
            wandb.log({"c": 3}, step=10)
            wandb.run.summary["best"] = 9
            wandb.finish()
            """)
        self.assertEqual(p.returncode, 0, p.stderr)
        rows = [l for l in lines if "_step" in l]
        self.assertEqual([r["_step"] for r in rows], [0, 1, 2, 3, 10])
        self.assertEqual(rows[3]["a"], 1)
        self.assertEqual(rows[3]["b"], 2)
        final = lines[-1]["_summary"]
        self.assertEqual(final["val_loss"], 0.3)  # min, as defined
        self.assertEqual(final["acc"], 0.2)       # last
        self.assertEqual(final["best"], 9)

    def test_finished_at_exit_and_numpy_like_values(self):
        p, lines = run("""
            import wandb
            class Scalar:
                def item(self):
                    return 2.5
            wandb.init(config={"x": 1})
            wandb.log({"loss": Scalar(), "nan": float("nan"), "arr": (1, 2)})
            """)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(lines[1]["loss"], 2.5)
        self.assertIsNone(lines[1]["nan"])
        self.assertEqual(lines[1]["arr"], [1, 2])
        self.assertIn("_summary", lines[-1])

    def test_rest_of_the_api_accepted_and_warned_once(self):
        p, lines = run("""
            import wandb
            wandb.login()
            run = wandb.init()
            wandb.watch(None, log="all")
            wandb.watch(None)
            t = wandb.Table(columns=["a"])
            t.add_data(1)
            art = wandb.Artifact("m", type="model")
            art.add_file("x")
            run.log_artifact(art)
            wandb.save("*.pt")
            with wandb.init() as r:
                r.log({"ok": 1})
            """)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stderr.count("wandb.watch is accepted and ignored"), 1)
        for name in ("wandb.login", "wandb.Table", "wandb.Artifact", "run.log_artifact",
                     "wandb.save"):
            self.assertIn(name + " is accepted and ignored", p.stderr)
        self.assertTrue(any(l.get("ok") == 1 for l in lines))

    def test_log_before_init_fails_as_wandb_does(self):
        p, _ = run("""
            import wandb
            wandb.log({"x": 1})
            """)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("wandb.init() before wandb.log()", p.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
