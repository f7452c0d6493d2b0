"""wandb - what W&B sweep scripts call, for programs run by meshsweep.

meshsweep puts this package first on a program task's PYTHONPATH (DESIGN.md
"Program tasks", docs/PROGRAMS.md), so a training script written for W&B runs
unchanged on a pool: ``wandb.init`` returns a run whose ``config`` holds the
sweep's values over the script's defaults, ``wandb.log`` records history rows,
``run.summary`` the summary, and ``wandb.finish`` ends the run. Every record
is one JSON line appended to the file named by ``$MESHSWEEP_METRICS`` (the
node's metrics pipe), in the format any program may write itself:

    {"loss": 0.41, "_step": 3}        a history row (keys are metric names;
                                      "_step" optional, counted from 0)
    {"_summary": {"best_acc": 0.9}}   summary values (merged)
    {"_config": {"lr": 0.001}}        the run's configuration (merged)

The run's configuration comes from ``$MESHSWEEP_CONFIG`` (a JSON object: the
sweep's parameters for this run, nested as the sweep file nests them). The
rest of wandb's API (artifacts, save, watch, login, tables, media, alerts,
...) is accepted and does nothing; each name warns once on stderr.

Only the standard library is used; Python 3.7 or later.
"""

import atexit
import json
import math
import numbers
import os
import sys
import time

__version__ = "0.0.0-meshsweep"

_WARNED = set()


def _warn(name):
    if name not in _WARNED:
        _WARNED.add(name)
        sys.stderr.write("wandb (meshsweep): %s is accepted and ignored\n" % name)
        sys.stderr.flush()


def _jsonable(value):
    """A value as JSON can hold it: numbers (numpy and torch scalars too),
    strings, booleans, None, lists and dicts; anything else as its str()."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        v = float(value)
        return v if math.isfinite(v) else None
    item = getattr(value, "item", None)  # numpy / torch scalars
    if callable(item):
        try:
            return _jsonable(item())
        except (TypeError, ValueError, RuntimeError):
            pass
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return str(value)


def _merge(base, over):
    """base with over's keys on top, nested dicts merged (sweep values win)."""
    out = dict(base)
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = _merge(out[k], v)
        else:
            out[k] = v
    return out


class _Sink:
    """Appends JSON lines to $MESHSWEEP_METRICS (or nowhere when unset)."""

    def __init__(self):
        path = os.environ.get("MESHSWEEP_METRICS")
        self._f = open(path, "a", buffering=1) if path else None

    def write(self, obj):
        if self._f:
            self._f.write(json.dumps(obj, separators=(",", ":"), allow_nan=False) + "\n")
            self._f.flush()

    def close(self):
        if self._f:
            self._f.close()
            self._f = None


class Config:
    """wandb.config: attribute and item access to the run's configuration.
    The sweep's values win over the script's defaults and over update()."""

    def __init__(self):
        object.__setattr__(self, "_items", {})
        object.__setattr__(self, "_locked", set())
        object.__setattr__(self, "_on_change", None)

    def _set_sweep(self, values):
        self._items.update(_merge(self._items, values))
        self._locked.update(values.keys())

    def update(self, d=None, allow_val_change=False, **kwargs):
        d = dict(d or {}, **kwargs)
        if hasattr(d, "__dict__") and not isinstance(d, dict):
            d = vars(d)  # argparse.Namespace
        changed = {}
        for k, v in d.items():
            if k in self._locked:
                continue  # the sweep's value stands
            self._items[k] = v
            changed[k] = v
        if changed and self._on_change:
            self._on_change(changed)

    def setdefaults(self, d):
        """The script's defaults under what is set (nested dicts merged: a
        sweep's nested value replaces only its own leaf)."""
        for k, v in d.items():
            if k not in self._items:
                self._items[k] = v
            elif isinstance(v, dict) and isinstance(self._items[k], dict):
                self._items[k] = _merge(v, self._items[k])

    def get(self, key, default=None):
        return self._items.get(key, default)

    def keys(self):
        return self._items.keys()

    def items(self):
        return self._items.items()

    def values(self):
        return self._items.values()

    def as_dict(self):
        return dict(self._items)

    def __getitem__(self, key):
        return self._items[key]

    def __setitem__(self, key, value):
        self.update({key: value})

    def __contains__(self, key):
        return key in self._items

    def __iter__(self):
        return iter(self._items)

    def __len__(self):
        return len(self._items)

    def __getattr__(self, key):
        try:
            return self._items[key]
        except KeyError:
            raise AttributeError(key) from None

    def __setattr__(self, key, value):
        if key.startswith("_"):
            object.__setattr__(self, key, value)
        else:
            self.update({key: value})

    def __repr__(self):
        return repr(self._items)


class Summary(dict):
    """run.summary: a dict; each logged key's last value unless the script
    sets it (or define_metric asks for min or max)."""

    def __init__(self, run):
        super().__init__()
        self._run = run
        self._explicit = set()

    def __setitem__(self, key, value):
        self._explicit.add(key)
        super().__setitem__(key, value)
        self._run._emit({"_summary": {key: _jsonable(value)}})

    def update(self, d=None, **kwargs):
        for k, v in dict(d or {}, **kwargs).items():
            self[k] = v

    def __getattr__(self, key):
        try:
            return self[key]
        except KeyError:
            raise AttributeError(key) from None

    def __setattr__(self, key, value):
        if key.startswith("_"):
            object.__setattr__(self, key, value)
        else:
            self[key] = value

    def _logged(self, key, value, how):
        if key in self._explicit or not isinstance(value, (int, float)):
            if key not in self._explicit:
                dict.__setitem__(self, key, value)
            return
        old = self.get(key)
        if how == "min" and isinstance(old, (int, float)):
            value = min(old, value)
        elif how == "max" and isinstance(old, (int, float)):
            value = max(old, value)
        dict.__setitem__(self, key, value)


class _Ignored:
    """What an ignored call returns: callable, indexable, any attribute."""

    def __call__(self, *args, **kwargs):
        return self

    def __getattr__(self, key):
        return self

    def __getitem__(self, key):
        return self

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def __iter__(self):
        return iter(())

    def __bool__(self):
        return False


class Run:
    """A run: id, name, config, summary, log, finish, define_metric."""

    def __init__(self, config_defaults, name=None, project=None, tags=None):
        self.id = os.environ.get("WANDB_RUN_ID", "meshsweep-run")
        self.name = name or os.environ.get("WANDB_NAME", self.id)
        self.project = project or os.environ.get("WANDB_PROJECT", "meshsweep")
        self.sweep_id = os.environ.get("WANDB_SWEEP_ID")
        self.entity = os.environ.get("WANDB_ENTITY")
        self.tags = tuple(tags or ())
        self.dir = os.getcwd()
        self.config = config
        self.summary = Summary(self)
        self._sink = _Sink()
        self._step = 0
        self._row = {}
        self._summary_how = {}
        self._start = time.time()
        self._finished = False
        defaults = config_defaults
        if defaults is not None and not isinstance(defaults, dict):
            defaults = vars(defaults) if hasattr(defaults, "__dict__") else dict(defaults)
        if defaults:
            config.setdefaults(defaults)
        self._emit({"_config": _jsonable(config.as_dict())})
        config._on_change = lambda changed: self._emit({"_config": _jsonable(changed)})

    def _emit(self, obj):
        if not self._finished:
            self._sink.write(obj)

    def log(self, data, step=None, commit=None, sync=None):
        if self._finished:
            return
        if step is not None and step > self._step and self._row:
            self._commit()
        if step is not None:
            self._step = max(self._step, int(step))
        for k, v in data.items():
            self._row[str(k)] = _jsonable(v)
        if commit is not False:
            self._commit()

    def _commit(self):
        if not self._row:
            return
        row = dict(self._row)
        row["_step"] = self._step
        row["_runtime"] = round(time.time() - self._start, 3)
        self._emit(row)
        for k, v in self._row.items():
            self.summary._logged(k, v, self._summary_how.get(k, "last"))
        self._row = {}
        self._step += 1

    def define_metric(self, name, step_metric=None, summary=None, goal=None, **kwargs):
        for how in (summary or "").split(","):
            if how.strip() in ("min", "max", "last"):
                self._summary_how[name] = how.strip()
        return _Ignored()

    def finish(self, exit_code=None, quiet=None):
        if self._finished:
            return
        self._commit()
        self._emit({"_summary": _jsonable(dict(self.summary))})
        self._finished = True
        self._sink.close()
        global run
        if run is self:
            run = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.finish()
        return False

    def __getattr__(self, key):
        _warn("run." + key)
        return _Ignored()


def _sweep_values():
    text = os.environ.get("MESHSWEEP_CONFIG")
    if not text:
        return {}
    values = json.loads(text)
    if not isinstance(values, dict):
        raise ValueError("MESHSWEEP_CONFIG is not a JSON object")
    return values


config = Config()
config._set_sweep(_sweep_values())
summary = None
run = None


def init(project=None, entity=None, config=None, name=None, tags=None, reinit=None,
         **kwargs):
    """Start the run (once; a second call returns the same run unless
    reinit): the sweep's values over config's defaults."""
    global run, summary
    if run is not None and not reinit:
        return run
    if run is not None:
        run.finish()
    run = Run(config, name=name, project=project, tags=tags)
    summary = run.summary
    return run


def log(data, step=None, commit=None, sync=None):
    """Log a history row (wandb.init first, as W&B requires)."""
    if run is None:
        raise RuntimeError("You must call wandb.init() before wandb.log()")
    run.log(data, step=step, commit=commit)


def define_metric(name, *args, **kwargs):
    if run is None:
        raise RuntimeError("You must call wandb.init() before wandb.define_metric()")
    return run.define_metric(name, *args, **kwargs)


def finish(exit_code=None, quiet=None):
    if run is not None:
        run.finish(exit_code=exit_code)


@atexit.register
def _at_exit():
    if run is not None:
        run.finish()


def __getattr__(name):
    """wandb.save, wandb.watch, wandb.login, wandb.Table, wandb.Image, ...:
    accepted and ignored (one warning line each)."""
    if name.startswith("__"):
        raise AttributeError(name)
    _warn("wandb." + name)
    return _Ignored()
