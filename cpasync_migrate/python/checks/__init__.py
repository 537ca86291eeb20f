"""The checks of the libcst pass, one module per call shape.

``legacy_call``: CPA001 / CPA002 (a legacy offset-form call and its rewrite);
``access_ptr_call``: CPA004 / CPA005 and ``--from`` conversions (a call already in the
access-pointer form).  CPA003 (TVM's namespace) is decided in ``rewrite.visit_call``.
"""
