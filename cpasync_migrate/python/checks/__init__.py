"""The checks of the libcst pass, one module per call shape.

``legacy_call``: CPA001 / CPA002 (a legacy offset-form call and its rewrite);
``access_ptr_call``: CPA004 / CPA005 and ``--from`` conversions (a call already in the
access-pointer form); ``value_read``: CPA008.  Each check is a unit holding the file's context
(``context.Context``) as ``ctx``, reaching its services (``ctx.bindings``, ``ctx.imports``, ``ctx.smem``,
``ctx.resolver``) through it.  CPA003 (TVM's namespace) is decided in ``rewrite._Pass.visit_call``.
"""
