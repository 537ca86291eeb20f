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
from cpasync_migrate.rules import SCHEMA, RulesError, load_rules, read_rules_file, rules_dir

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
