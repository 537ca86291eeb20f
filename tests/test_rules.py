"""rules/*.toml are data with a checked layout: the schema each file states, no unknown key,
no missing required key; and the shipped rules load and say what the front ends use."""
import re
import shutil
import tomllib
from pathlib import Path

import pytest

from conftest import run_cli
from cpasync_migrate import files
from cpasync_migrate.cpp import SUFFIXES as CPP_SUFFIXES
from cpasync_migrate.cpp.cpprules import load_cpp_rules
from cpasync_migrate.rules import REQUIRED_FILES, SCHEMA, RulesError, load_rules, read_rules_file, rules_dir

SHIPPED = rules_dir()
LEGACY = (
    "import tilelang.language as T\n\n"
    "@T.prim_func\n"
    "def k(A: T.Tensor((128,), \"float16\")):\n"
    "    with T.Kernel(1, threads=16) as bx:\n"
    "        S = T.alloc_shared((128,), \"float16\")\n"
    "        tx = T.get_thread_binding()\n"
    "        T.ptx_cp_async(\"float16\", S.data, tx * 8, A.data, tx * 8, 16)\n"
)


@pytest.fixture
def rules(tmp_path):
    """A copy of the shipped rules folder to break."""
    d = tmp_path / "rules"
    shutil.copytree(SHIPPED, d)
    return d


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, (path, old)
    path.write_text(text.replace(old, new), encoding="utf-8")


def _error(d: Path) -> str:
    with pytest.raises(RulesError) as e:
        load_rules(str(d))
    return str(e.value)


def test_the_shipped_rules_load():
    rules = load_rules()
    assert [g.name for g in rules.generations] == ["legacy", "0.1.8", "0.1.9"]
    assert set(rules.versions) == {p.name for p in SHIPPED.glob("*.toml")}
    for p in SHIPPED.glob("*.toml"):
        assert tomllib.loads(p.read_text(encoding="utf-8"))["schema"] == SCHEMA
        read_rules_file(p)  # every file on its own, too
    cpp = load_cpp_rules(rules)
    assert cpp.op_name == rules.intrinsic == "ptx_cp_async"
    assert cpp.suppress_comment == rules.suppress_comment == "cpasync-migrate: ignore"
    assert rules.emit_alias == "T" and rules.emit_fallback_alias == "TL"


def test_the_access_pointer_facts_are_stated_where_they_exist():
    legacy, g018, g019 = load_rules().generations
    assert legacy.form == "offset" and legacy.access_ptr is None and legacy.dst_rw_mask is None
    assert legacy.widths == (4, 8, 16) and not legacy.size_literal and not legacy.same_width
    for g in (g018, g019):
        assert (g.access_ptr, g.type_annotation, g.dst_rw_mask, g.src_rw_mask) == (
            "tvm_access_ptr", "type_annotation", 2, 1)
    assert (g018.buffer_access_ptr, g018.dst_rw, g018.src_rw) == (None, None, None)
    assert (g019.buffer_access_ptr, g019.dst_rw, g019.src_rw) == ("access_ptr", "w", "r")


@pytest.mark.parametrize("name, old, new, table, key", [
    ("legacy.toml", 'form = "offset"\n', 'form = "offset"\nfrom = "0.1.8"\n', "generation", "from"),
    ("tilelang-0.1.8.toml", "[step]\n", '[step]\nsize = "keep"\n', "step", "size"),
    ("cpp.toml", 'same_as = "same_as"\n', 'same_as = "same_as"\nsame_ass = "x"\n', "consumer", "same_ass"),
    ("namespaces.toml", 'emit_alias = "T"\n', 'emit_alias = "T"\nemit_alais = "U"\n', "tilelang", "emit_alais"),
    ("namespaces.toml", 'alloc_shared = { position = 1, keyword = "dtype" }',
     'alloc_shared = { position = 1, keyword = "dtype", scope = 2 }', "declarations.alloc_shared", "scope"),
    ("dtypes.toml", "[aliases]\n", "[defaults]\nbuffer = \"float32\"\n\n[aliases]\n", "", "defaults"),
    ("shared_memory.toml", 'merged_scope = "shared.dyn"\n', 'merged_scope = "shared.dyn"\napplies_to = "legacy"\n',
     "", "applies_to"),
    ("python_api.toml", "[upstream]\n", "[extra]\nx = 1\n\n[upstream]\n", "", "extra"),
])
def test_an_unknown_key_names_the_file_the_table_and_the_key(rules, name, old, new, table, key):
    _edit(rules / name, old, new)
    msg = _error(rules)
    where = f"[{table}]" if table else "the top level"
    assert msg.startswith(f"{rules / name}: unknown key {key!r} in {where}"), msg


@pytest.mark.parametrize("value", ["2", "0", '"1"'])
def test_a_wrong_schema_is_refused(rules, value):
    _edit(rules / "tilelang-0.1.9.toml", "schema = 1\n", f"schema = {value}\n")
    msg = _error(rules)
    assert msg.startswith(f"{rules / 'tilelang-0.1.9.toml'}: schema ") and f"reads schema {SCHEMA}" in msg, msg


def test_a_file_without_a_schema_is_refused(rules):
    _edit(rules / "dtypes.toml", "schema = 1\n", "")
    msg = _error(rules)
    assert msg.startswith(f"{rules / 'dtypes.toml'}: missing required key 'schema'"), msg


@pytest.mark.parametrize("name, old, table, key", [
    ("legacy.toml", "widths = [4, 8, 16]\n", "generation", "widths"),
    ("tilelang-0.1.8.toml", 'title = "access pointers + bytes"\n', "generation", "title"),
    ("python_api.toml", 'offset_param = "_offset$"\n', "helpers", "offset_param"),
    ("namespaces.toml", 'emit_fallback_alias = "TL"\n', "tilelang", "emit_fallback_alias"),
    ("cpp.toml", 'exclude = "(?i)bulk"\n', "helpers", "exclude"),
    ("cpp.toml", 'arity_method = "set_num_inputs"\n', "registration", "arity_method"),
    # required because of the generation's form / its buffer access pointer
    ("tilelang-0.1.9.toml", "dst_rw_mask = 2\n", "generation", "dst_rw_mask"),
    ("tilelang-0.1.8.toml", 'type_annotation = "type_annotation"\n', "python", "type_annotation"),
    ("tilelang-0.1.9.toml", 'src_rw = "r"\n', "python", "src_rw"),
])
def test_a_missing_required_key_names_the_file_the_table_and_the_key(rules, name, old, table, key):
    _edit(rules / name, old, "")
    msg = _error(rules)
    assert msg.startswith(f"{rules / name}: missing required key {key!r} in [{table}]"), msg


def test_a_missing_required_table_is_refused(rules):
    text = (rules / "namespaces.toml").read_text(encoding="utf-8")
    text = re.sub(r"\[suppress\]\n(#[^\n]*\n)*comment = [^\n]*\n", "", text)
    (rules / "namespaces.toml").write_text(text, encoding="utf-8")
    msg = _error(rules)
    assert msg.startswith(f"{rules / 'namespaces.toml'}: missing required table 'suppress' in the top level"), msg


def test_an_unknown_file_is_refused(rules):
    (rules / "extra.toml").write_text('schema = 1\nrules_version = "1"\n[op]\nname = "x"\n', encoding="utf-8")
    assert _error(rules).startswith(f"{rules / 'extra.toml'}: not a rules file this version knows")


def test_cpp_rules_come_from_the_folder_the_rules_were_read_from(rules):
    _edit(rules / "cpp.toml", 'offset_name = "offset"\n', 'offset_name = "off"\n')
    assert load_cpp_rules(load_rules(str(rules))).offset_name == "off"
    assert load_cpp_rules(load_rules()).offset_name == "offset"


def test_the_cli_reports_a_broken_rules_file_as_a_usage_error(rules, tmp_path):
    (tmp_path / "k.py").write_text(LEGACY, encoding="utf-8")
    r = run_cli("--check", "k.py", cwd=tmp_path, env={"CPASYNC_MIGRATE_RULES": str(rules)})
    assert r.returncode == 1, r.stderr  # the copy as shipped: a legacy site
    _edit(rules / "tilelang-0.1.8.toml", "[cpp]\n", "[cpp]\nargz = []\n")
    r = run_cli("--check", "k.py", cwd=tmp_path, env={"CPASYNC_MIGRATE_RULES": str(rules)})
    assert r.returncode == 3  # a usage or configuration error (README, exit codes)
    assert f"{rules / 'tilelang-0.1.8.toml'}: unknown key 'argz' in [cpp]" in r.stderr, r.stderr


def test_the_suffixes_have_one_home():
    assert CPP_SUFFIXES is files.CPP_SUFFIXES


# ---------------------------------------------------------------- every file the code reads is required

@pytest.mark.parametrize("name", REQUIRED_FILES)
def test_a_missing_rules_file_names_the_folder_and_the_file(rules, name):
    (rules / name).unlink()
    msg = _error(rules)
    assert msg.startswith(f"{rules}: rules are incomplete: {name} missing ("), msg


def test_the_required_files_are_every_layout_and_the_first_generation():
    assert set(REQUIRED_FILES) == {"legacy.toml", "dtypes.toml", "namespaces.toml", "shared_memory.toml",
                                   "python_api.toml", "cpp.toml"}
    assert set(REQUIRED_FILES) <= {p.name for p in SHIPPED.glob("*.toml")}


def test_two_missing_files_are_both_named(rules):
    (rules / "cpp.toml").unlink()
    (rules / "python_api.toml").unlink()
    assert _error(rules).startswith(f"{rules}: rules are incomplete: cpp.toml, python_api.toml missing")


def test_the_cli_reports_a_missing_rules_file_as_a_usage_error(rules, tmp_path):
    (tmp_path / "k.py").write_text(LEGACY, encoding="utf-8")
    (rules / "shared_memory.toml").unlink()
    r = run_cli("--check", "k.py", cwd=tmp_path, env={"CPASYNC_MIGRATE_RULES": str(rules)})
    assert r.returncode == 3, r.stderr
    assert f"{rules}: rules are incomplete: shared_memory.toml missing" in r.stderr, r.stderr


def test_a_forced_allocation_needs_its_declaration(rules):
    _edit(rules / "namespaces.toml", 'alloc_shared = { position = 1, keyword = "dtype" }\n', "")
    msg = _error(rules)
    assert msg.startswith(f"{rules / 'shared_memory.toml'}: [allocations_forced] 'alloc_shared' has no entry in "
                          f"[declarations] of {rules / 'namespaces.toml'}"), msg


def test_a_first_generation_not_named_legacy_is_refused(rules):
    _edit(rules / "legacy.toml", 'name = "legacy"\n', 'name = "old"\n')
    assert _error(rules).startswith(f"{rules / 'legacy.toml'}: [generation] name is not 'legacy'")


# ---------------------------------------------------------------- the values come from the files

TWO_TILES = (
    "import tilelang.language as T\n\n\n"
    "@T.prim_func\n"
    "def k(A: T.Tensor((1024,), \"float16\")):\n"
    "    with T.Kernel(8, threads=16) as bx:\n"
    "        S = T.alloc_shared((128,), \"float16\")\n"
    "        R = T.alloc_shared((128,), \"float16\")\n"
    "        R[0] = A[0]\n"
    "        tx = T.get_thread_binding()\n"
    "        T.ptx_cp_async(\"uint8\", S.data, tx * 16, A.data, tx * 16, 16)\n"
)


def _python_fix(text: str, d) -> str:
    from cpasync_migrate import engine
    from cpasync_migrate.findings import FrontEndOptions

    r = load_rules(str(d) if d else None)
    opts = FrontEndOptions(rules=r, target=r.resolve("0.1.8"), source=r.legacy, style="tvm_access_ptr",
                           migrate_tvm=False, line_length=88)
    (f,) = engine.front_end("python").analyze(text, "k.py", opts).findings
    assert f.code == "CPA001", f.message
    (edit,) = f.fix.edits
    return edit.replacement


def test_min_allocations_is_read_from_shared_memory_toml(rules):
    # two used shared.dyn tiles merge (the offset counts the call's uint8); with three needed they do not
    # (the offset counts the buffer's float16, 16 bytes = 8 elements)
    assert 'T.type_annotation("uint8"), S.data, tx * 16, 16, 2' in _python_fix(TWO_TILES, None)
    _edit(rules / "shared_memory.toml", "min_allocations = 2\n", "min_allocations = 3\n")
    assert 'T.type_annotation("float16"), S.data, tx * 16, 8, 2' in _python_fix(TWO_TILES, rules)


def test_offset_param_is_read_from_python_api_toml(rules):
    from cpasync_migrate.python.definition_rules import helper_message

    params = ["dst", "dst_off", "src", "src_off"]
    assert helper_message(load_rules().python_api, "cp_async_gs", params) is None
    _edit(rules / "python_api.toml", 'offset_param = "_offset$"\n', 'offset_param = "_off$"\n')
    msg = helper_message(load_rules(str(rules)).python_api, "cp_async_gs", params)
    assert msg is not None and msg.startswith("runtime helper `cp_async_gs(dst, dst_off, src, src_off)`"), msg
