"""libcst's ScopeProvider resolved without the two traversals that compute nothing.

``MetadataWrapper.resolve_many((ScopeProvider,))`` runs its dependency ExpressionContextProvider and
then ScopeProvider, each as a batched visit of the whole module; each provider's only callback is
``visit_Module``, which runs the provider's own visitor over the module and returns None, so the
batched visit then walks (and, as every libcst visit does, rebuilds) every node again with nothing
to call.  ``resolve`` calls each provider's ``visit_Module`` directly, in the order and with the
dependencies the wrapper gives them, and stores what they computed as the wrapper stores it.

That holds while those two providers have no callback but ``visit_Module``; ``DIRECT`` is true only
then (read from libcst's own list of a visitor's callbacks, ``get_visitors``), and otherwise the
wrapper resolves them.  Environment ``CPASYNC_MIGRATE_DIRECT_SCOPES=0`` turns it off;
``tests/test_bigfile.py`` checks that both ways give every node of the project's Python files the
same scope kind, qualified names, assignments and accesses, and the same output.
"""
from __future__ import annotations

import os
from types import MappingProxyType

import libcst as cst
from libcst.metadata import ExpressionContextProvider, MetadataWrapper, ScopeProvider

_ORDER = (ExpressionContextProvider, ScopeProvider)  # each after what it depends on


def _only_visit_module() -> bool:
    try:
        return all(set(P().get_visitors()) == {"visit_Module"} and set(P.METADATA_DEPENDENCIES) <= set(_ORDER[:k])
                   for k, P in enumerate(_ORDER))
    except Exception:  # noqa: BLE001 - another libcst: the wrapper's way
        return False


DIRECT = os.environ.get("CPASYNC_MIGRATE_DIRECT_SCOPES", "1") != "0" and _only_visit_module()


def resolve(module: cst.Module) -> dict:
    """{ScopeProvider: {node: scope}} for ``module`` (which the wrapper does not copy)."""
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    if not DIRECT:
        return dict(wrapper.resolve_many((ScopeProvider,)))
    for P in _ORDER:
        p = P()
        with p.resolve(wrapper):  # its dependencies, from what the wrapper holds already
            p.visit_Module(module)
        wrapper._metadata[P] = MappingProxyType(dict(p._computed))
    return {ScopeProvider: wrapper._metadata[ScopeProvider]}
