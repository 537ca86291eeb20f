"""The C++ front end's diagnostic codes, as named constants.

The registry of every code (name, summary, fix safety) is ``cpasync_migrate/codes.py``; these
constants are the C++ front end's spelling of the codes it reports, kept in one place so
that no module of this package writes a code as a string literal.
"""
from __future__ import annotations

CONSTRUCTION_LIST = "CPA101"  # Call(dtype, <op>, {d, d_off, s, s_off, bytes[, pred]})
CONSTRUCTION_INDIRECT = "CPA102"  # through an argument array, an Op variable or an opaque expression
CONSUMER_REWRITABLE = "CPA103"  # the code generator's printer branch
CONSUMER_MANUAL = "CPA104"  # a reader of legacy positions left for a person
HELPER_SIGNATURE = "CPA105"  # a printer helper with the legacy (ptr, offset, ptr, offset, bytes) shape
DEAD_BRANCH = "CPA106"  # an unreachable repeat of the same same_as test
DUAL_LAYOUT = "CPA107"  # a branch that accepts both layouts (information)
NEAR_PARSE_ERROR = "CPA108"  # a site inside or next to a parse error (not edited)
MACRO = "CPA109"  # a macro definition that names the op
REGISTRATION = "CPA110"  # a registration that declares a legacy arity
MERGE_REBASE = "CPA111"  # the shared-memory merge pass's legacy branch
