"""The CLI's ``--emit-bundle DIR``: write the GPU bundle of a run's rewritten Python files.

The bundle (see docs/gpu.md) holds the lowered CUDA of both forms of every kernel, launch shapes,
parameter specs, seeds, the per-site checks and, for small kernels, the CPU interpreter's output for the
cross-check; ``python -m cpasync_migrate.verify.gpu DIR`` runs it on a GPU machine with only numpy and
cupy installed.
"""
from __future__ import annotations

import dataclasses


def emit_bundle(outcomes, settings, out_dir: str, *, seeds: int = 3) -> str:
    """Write the bundle of every changed Python file in ``outcomes``; returns the path of bundle.json.

    ``settings`` gives ``target``, ``source`` ("legacy" or a generation) and ``binds``."""
    from .rules import load_rules
    from .verify.bundle import kernel_items, write_bundle
    from .verify.options import VerifyOptions
    from .verify.verifier import emit_place

    rules = load_rules(getattr(settings, "rules_dir", None))
    source = getattr(settings, "source", "legacy")
    source = None if source in (None, "legacy") else source
    opts = VerifyOptions(rules=rules, target=settings.target, source=source,
                         binds=getattr(settings, "binds", None) or None)
    items, texts = [], {}
    for o in outcomes:
        if getattr(o, "language", "python") != "python" or o.old_text is None or not o.changed:
            continue
        own = opts if not getattr(o, "target", None) or o.target == opts.target else dataclasses.replace(
            opts, target=o.target)  # the file's own configuration named another target (file_settings.py)
        items += kernel_items(o.old_text, o.new_text, o.path, own, category="file", name=o.path)
        folders, name = emit_place(o.path)  # the file's own folders: a/k.py, b/k.py and a_k.py stay apart
        stem = "/".join(folders + [name])
        texts[f"{stem}.old.py"] = o.old_text
        texts[f"{stem}.new.py"] = o.new_text
    return write_bundle(items, out_dir, seeds=seeds, texts=texts,
                        meta={"target": settings.target, "source": source or "legacy", "files": len(texts) // 2})
