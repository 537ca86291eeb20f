"""Diagnostic codes: one entry per code (documented in README.md)."""

CODES = {
    "CPA001": {"name": "legacy-call", "summary": "Legacy offset-form ptx_cp_async call with an automatic fix", "fix": "safe or unsafe"},
    "CPA002": {"name": "legacy-call-manual", "summary": "Legacy ptx_cp_async call the tool cannot migrate; the message says why", "fix": "none"},
    "CPA003": {"name": "tvm-namespace-call", "summary": "Legacy call through TVM's namespace, whose wrapper keeps the legacy signature", "fix": "none (opt-in with --migrate-tvm)"},
    "CPA004": {"name": "dtype-keyword-on-new-call", "summary": "Access-pointer call that still passes dtype=, which shifts every argument", "fix": "none"},
    "CPA005": {"name": "suspicious-size", "summary": "Access-pointer call whose size is not a whole number of elements or not a legal cp.async width under the target", "fix": "none"},
    "CPA006": {"name": "legacy-api-definition", "summary": "The tree's own Python definition of ptx_cp_async with the legacy signature", "fix": "safe in the upstream shape (rewritten with its callers), else none"},
    "CPA007": {"name": "legacy-runtime-helper", "summary": "Python runtime helper that takes the legacy (dst, dst_offset, src, src_offset) shape from a code generator", "fix": "none"},
    "CPA010": {"name": "unused-suppression", "summary": "Suppression comment that suppresses nothing (no such site on its line or in its file, or an unknown code)", "fix": "none"},
    "CPA101": {"name": "cpp-construction-brace-list", "summary": "C++ construction of a legacy ptx_cp_async call with an inline argument list", "fix": "safe or unsafe"},
    "CPA102": {"name": "cpp-construction-args-array", "summary": "C++ construction of a legacy ptx_cp_async call through an argument array or an Op variable", "fix": "safe or unsafe"},
    "CPA103": {"name": "cpp-consumer-rewritable", "summary": "C++ consumer branch with the shape of the upstream code generator branch", "fix": "unsafe"},
    "CPA104": {"name": "cpp-consumer-manual", "summary": "C++ consumer that reads legacy argument positions", "fix": "none"},
    "CPA105": {"name": "cpp-legacy-helper-signature", "summary": "C++ helper whose signature carries the legacy argument shape", "fix": "none"},
    "CPA106": {"name": "cpp-dead-duplicate-branch", "summary": "Unreachable second ptx_cp_async branch in the same if/else chain", "fix": "unsafe (deletes the branch)"},
    "CPA107": {"name": "cpp-dual-layout-branch", "summary": "Branch that accepts both layouts on purpose (information)", "fix": "none"},
    "CPA108": {"name": "cpp-site-near-parse-error", "summary": "Site inside or next to a region tree-sitter cannot parse (macros, #if); not edited", "fix": "none"},
    "CPA109": {"name": "cpp-macro-names-op", "summary": "Macro definition that names the ptx_cp_async op; macros are not rewritten", "fix": "none"},
    "CPA110": {"name": "cpp-registration-legacy-arity", "summary": "C++ registration of the ptx_cp_async op that declares a legacy arity (set_num_inputs(5) or (6))", "fix": "unsafe (sets the target's arity)"},
    "CPA111": {"name": "cpp-merge-rebase-rewritable", "summary": "Shared-memory merge pass branch that re-bases the legacy destination and rebuilds the call, in the upstream shape", "fix": "unsafe (opens the destination access pointer and re-bases it in its own type's units)"},
    "CPA900": {"name": "file-error", "summary": "File cannot be read, decoded or parsed, or its rewrite does not re-parse", "fix": "none"},
}
