"""Integer polynomials over the verifier's expressions: the normal form both the per-site checks
(``sites.py``) and the structure comparison (``structure.py``) compare texts by."""
from __future__ import annotations

from .ir import Bin, Cast, Cmp, Const, Expr, Load, Logic, Math, Select, Unary, Var


def poly(e: Expr) -> dict:
    """Integer polynomial {monomial: coeff}; monomial = sorted tuple of atom keys."""
    t = type(e)
    if t is Const:
        if isinstance(e.value, bool) or not isinstance(e.value, int):
            return {(("c", repr(e.value)),): 1}
        return {(): e.value} if e.value else {}
    if t is Var:
        return {(("v", e.name),): 1}
    if t is Bin and e.op in ("add", "sub", "mul"):
        a, b = poly(e.a), poly(e.b)
        if e.op == "add":
            return padd(a, b, 1)
        if e.op == "sub":
            return padd(a, b, -1)
        return pmul(a, b)
    if t is Unary and e.op == "neg":
        return {m: -c for m, c in poly(e.a).items()}
    if t is Bin and e.op == "shl" and isinstance(e.b, Const) and isinstance(e.b.value, int) and e.b.value >= 0:
        return {m: c << e.b.value for m, c in poly(e.a).items()}
    return {(("o", key(e)),): 1}


def key(e: Expr) -> str:
    """A canonical text of ``e`` with polynomial subterms normalised."""
    t = type(e)
    if t in (Const, Var) or (t is Bin and e.op in ("add", "sub", "mul")) or (t is Unary and e.op == "neg"):
        return "P" + repr(sorted(poly(e).items()))
    if t in (Bin, Cmp, Logic):
        return f"{t.__name__}.{e.op}({key(e.a)},{key(e.b)})"
    if t is Unary:
        return f"U.{e.op}({key(e.a)})"
    if t is Select:
        return f"S({key(e.cond)},{key(e.a)},{key(e.b)})"
    if t is Cast:
        return f"C.{e.dtype}({key(e.a)})"
    if t is Load:
        return f"L.{e.buf.name}[{','.join(key(i) for i in e.indices)}]"
    if t is Math:
        return f"M.{e.fn}({','.join(key(a) for a in e.args)})"
    return repr(e)


def padd(a: dict, b: dict, sign: int) -> dict:
    out = dict(a)
    for m, c in b.items():
        out[m] = out.get(m, 0) + sign * c
        if out[m] == 0:
            del out[m]
    return out


def pmul(a: dict, b: dict) -> dict:
    out = {}
    for ma, ca in a.items():
        for mb, cb in b.items():
            m = tuple(sorted(ma + mb))
            out[m] = out.get(m, 0) + ca * cb
            if out[m] == 0:
                del out[m]
    return out


def scale(e: Expr, k: int) -> Expr:
    """``e`` times ``k`` as pointer arithmetic does it: ``e`` in its own type, widened, then multiplied
    (the int64 constant makes the product int64, as TVM types it)."""
    return Bin("mul", e, Const(k, "int64"))
