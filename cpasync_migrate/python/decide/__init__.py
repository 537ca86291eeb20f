"""The Python front end's decisions, apart from any parse tree (one module per check).

Each parser only reads facts from the text (the fast pass with the standard library's ``ast``,
the libcst pass with libcst) and asks these modules what the facts mean: which check a call goes
to, whether it is a finding, its message.  No module here imports a parser, so the fast pass
stays free of libcst, and the two passes cannot drift apart on a decision they share.

- ``access_ptr``: CPA004 / CPA005 of a call in the access-pointer form, and ``--from``'s size
  conversion;
- ``attributes``: the module an attribute chain reaches where a package's attribute shadows its
  submodule (both passes qualify callees through it);
- ``dispatch``: which check a call of the intrinsic goes to (legacy, access pointer, TVM's wrapper,
  neither form).

The other parser-free decision modules predate this package: ``route_rules.py`` (CPA008) and
``definition_rules.py`` (CPA006 / CPA007).
"""
