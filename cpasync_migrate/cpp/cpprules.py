"""``rules/cpp.toml``: how the intrinsic is spelled in C++ (read once)."""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Optional

from ..rules import Rules, RulesError, load_rules, read_rules_file
from .source import squash


@dataclass(frozen=True)
class CppRules:
    """How the intrinsic, its argument arrays and its helpers are spelled in C++ (``rules/cpp.toml``)."""

    op_name: str
    op_qualifiers: tuple[str, ...]
    call_constructors: tuple[str, ...]
    array_types: tuple[str, ...]
    append_methods: tuple[str, ...]
    op_types: tuple[str, ...]
    same_as: str
    op_field: str
    args_field: str
    check_macros: tuple[str, ...]
    offset_join: tuple[str, ...]
    offset_name: str
    roles: dict
    emit: dict
    helper_names: tuple[str, ...]
    pointer_param: re.Pattern
    offset_param: re.Pattern
    helper_exclude: re.Pattern
    suppress_comment: str
    rules_version: str
    # Which IR op each qualifier names, and the rule for an unqualified spelling ([op.context]).
    op_ops: dict
    op_getters: tuple  # callees that look an op up by its registered name (Op::Get)
    op_registered: dict  # registered name -> the IR op
    context_default: str
    context_namespaces: dict
    context_using: dict
    # Registration macros (name -> op) and the method that declares the arity.
    registration_macros: dict
    arity_method: str
    helper_op: str
    # Checks of a whole condition (ICHECK(cond) << ...).
    condition_macros: tuple
    # What shows an argument is an access pointer (callee names; a local's name).
    access_pointer_calls: tuple = ()
    access_pointer_name: Optional[re.Pattern] = None

    def is_op_spelling(self, text: str) -> bool:
        """``text`` (the callee of a zero-argument call) names the intrinsic's Op."""
        s = squash(text)
        for q in self.op_qualifiers:
            if s == (f"{q}::{self.op_name}" if q else self.op_name):
                return True
        return False

    def op_scope(self, text: str) -> str:
        s = squash(text)
        return s[: -len(self.op_name)] if s.endswith(self.op_name) else ""

    def op_of_scope(self, scope: str) -> Optional[str]:
        """The IR op a qualified spelling's scope names (``"tvm::tirx::builtin::"`` -> TVM's);
        None for the unqualified spelling, which takes its op from the context."""
        q = scope[:-2] if scope.endswith("::") else scope
        return self.op_ops.get(q) if q else None

    def is_array_type(self, text: str) -> bool:
        return squash(text) in {squash(t) for t in self.array_types}

    def is_op_type(self, text: str) -> bool:
        s = squash(text).replace("const", "").replace("&", "")
        return s in {squash(t) for t in self.op_types}

    def role(self, arg_name: str) -> Optional[str]:
        return self.roles.get(arg_name)


def _load(path: Path, op_name: str, suppress_comment: str) -> CppRules:
    data = read_rules_file(path)
    op, cons, emit, helpers, reg = data["op"], data["consumer"], data["emit"], data["helpers"], data["registration"]
    context = op["context"]
    return CppRules(
        op_name=op_name,
        op_qualifiers=tuple(op["qualifiers"]),
        call_constructors=tuple(squash(c) for c in op["call_constructors"]),
        array_types=tuple(op["array_types"]),
        append_methods=tuple(op["append_methods"]),
        op_types=tuple(op["op_types"]),
        same_as=cons["same_as"],
        op_field=cons["op_field"],
        args_field=cons["args_field"],
        check_macros=tuple(cons["check_macros"]),
        offset_join=tuple(cons["offset_join"]),
        offset_name=cons["offset_name"],
        roles=dict(data["roles"]),
        emit=dict(emit),
        helper_names=tuple(helpers["names"]),
        pointer_param=re.compile(helpers["pointer_param"]),
        offset_param=re.compile(helpers["offset_param"]),
        helper_exclude=re.compile(helpers["exclude"]),
        suppress_comment=suppress_comment,
        rules_version=str(data["rules_version"]),
        op_ops=dict(op["ops"]),
        op_getters=tuple(squash(g) for g in op.get("getters", ())),
        op_registered=dict(op.get("registered", {})),
        context_default=context["default"],
        context_namespaces=dict(context["namespaces"]),
        context_using={squash(k): v for k, v in context["using"].items()},
        registration_macros=dict(reg["macros"]),
        arity_method=reg["arity_method"],
        helper_op=helpers["op"],
        condition_macros=tuple(cons["condition_macros"]),
        access_pointer_calls=tuple(op["access_pointer_calls"]),
        access_pointer_name=re.compile(op["access_pointer_name"]),
    )


@lru_cache(maxsize=4)
def _cached(path: str, mtime: float, op_name: str, suppress_comment: str) -> CppRules:
    return _load(Path(path), op_name, suppress_comment)


def load_cpp_rules(rules: Optional[Rules] = None) -> CppRules:
    """Load ``cpp.toml`` from the folder ``rules`` was read from (default: :func:`load_rules`'s).

    The intrinsic's name and the suppression comment come from ``rules`` (namespaces.toml).
    """
    rules = rules if rules is not None else load_rules()
    path = Path(rules.directory) / "cpp.toml"
    try:
        mtime = path.stat().st_mtime
    except OSError as e:
        raise RulesError(f"{path}: {e}") from e
    return _cached(str(path), mtime, rules.intrinsic, rules.suppress_comment)
