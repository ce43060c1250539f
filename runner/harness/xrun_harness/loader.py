"""The experiment's code: its "module:callable" references imported, and the
calls the harness makes of them (inputs, reference, fn, models, metrics)."""

import importlib
import inspect
import math

from .errors import StageError, stage
from .protocol import Models, finite

MODEL_KEYS = ("flops", "bytes", "tokens")


def resolve(ref, what):
    """Imports "module:attr.attr" and returns the callable (None for an
    empty ref); failures are import errors at stage what."""
    if not ref:
        return None
    mod_name, _, attr = ref.partition(":")
    try:
        obj = importlib.import_module(mod_name)
    except BaseException as e:  # noqa: B902 - the module's code may raise anything
        if isinstance(e, (KeyboardInterrupt, SystemExit)):
            raise
        raise StageError(what, e) from e
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError as e:
            err = ImportError("%s: module %r has no attribute %r" % (ref, mod_name, part))
            raise StageError(what, err) from e
    if not callable(obj):
        raise StageError(what, ImportError("%s is not callable" % ref))
    return obj


def positional_arity(f):
    """Number of positional parameters f accepts (inf with *args)."""
    try:
        sig = inspect.signature(f)
    except (TypeError, ValueError):
        return 1
    n = 0
    for p in sig.parameters.values():
        if p.kind == p.VAR_POSITIONAL:
            return math.inf
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            n += 1
    return n


def split_inputs(x):
    """inputs(...) may return a tuple/list (positional) or a dict (keyword)."""
    if isinstance(x, dict):
        return (), dict(x)
    if isinstance(x, (list, tuple)):
        return tuple(x), {}
    return (x,), {}


def case_params(params, device):
    """A case's parameters as the experiment's callables get them."""
    p = dict(params)
    p["device"] = device
    return p


class Code:
    """The callables init named: fn (run and timed), and the reference,
    inputs, models and metrics where the spec has them."""

    def __init__(self, impl="", fn=None, reference=None, inputs=None, models=None, metrics=None, impl_params=None):
        self.impl = impl
        self.fn = fn
        self.reference = reference
        self.inputs = inputs
        self.models = dict(models or {})
        self.metrics = metrics
        self.impl_params = dict(impl_params or {})

    @classmethod
    def load(cls, init):
        """Imports init's references (a protocol.Init), in the order a
        failure is reported in: inputs, reference, fn, models, metrics."""
        inputs = resolve(init.inputs, "inputs")
        reference = resolve(init.reference, "reference")
        fn = resolve(init.fn, "fn")
        models = {k: resolve(v, k) for k, v in init.models.items()}
        metrics = resolve(init.metrics, "metrics")
        return cls(init.impl, fn, reference, inputs, models, metrics, init.impl_params)

    def make_inputs(self, params, seed):
        """(args, kwargs) for one seed."""
        if self.inputs is None:
            raise StageError("inputs", ValueError("the spec names no inputs callable"))
        return split_inputs(stage("inputs", self.inputs, params, seed))

    def call_fn(self, args, kwargs):
        """fn on the inputs, with the implementation's parameters."""
        if self.impl_params:
            kw = dict(kwargs)
            kw.update(self.impl_params)
            return stage("fn", self.fn, *args, **kw)
        return stage("fn", self.fn, *args, **kwargs)

    def call_reference(self, args, kwargs):
        return stage("reference", self.reference, *args, **kwargs)

    def run_models(self, params):
        """The work models and metrics of one case: a model of one positional
        parameter gets the params, one of two also the implementation's name."""
        ev = Models()
        for key in MODEL_KEYS:
            f = self.models.get(key)
            if f is None:
                continue
            if positional_arity(f) >= 2:
                v = stage(key, f, params, self.impl)
            else:
                v = stage(key, f, params)
            setattr(ev, key, finite(v))
        if self.metrics is not None:
            m = stage("metrics", self.metrics, params, dict(self.impl_params))
            if not isinstance(m, dict):
                raise StageError("metrics", TypeError("metrics returned a %s, not a dict" % type(m).__name__))
            ev.metrics = {str(k): finite(v) for k, v in m.items()}
        return ev
