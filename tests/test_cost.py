"""The order hits go out in (cost.py): a Python file that looks legacy before every larger file."""
from cpasync_migrate.cost import cost_of

LEGACY = 'T.ptx_cp_async("float16", S.data, T.int32(0), A.data, i * 8, 16)\n'
NEW = 'T.ptx_cp_async(T.access_ptr(S[0], "w", 8), T.access_ptr(A[i * 8], "r", 8), 16)\n'
NEW_TVM = ('T.ptx_cp_async(T.tvm_access_ptr(T.type_annotation("float16"), S.data, 0, 8, 2),\n'
           '                T.tvm_access_ptr(T.type_annotation("float16"), A.data, 0, 8, 1), 16)\n')


def test_a_legacy_looking_python_file_goes_first(tmp_path):
    legacy = tmp_path / "k.py"
    legacy.write_text(LEGACY)
    big_new = tmp_path / "big.py"
    big_new.write_text(NEW * 2000)
    tvm_new = tmp_path / "tvm.py"
    tvm_new.write_text(NEW_TVM)
    big_cc = tmp_path / "big.cc"
    big_cc.write_text("// ptx_cp_async(\n" + "int x;\n" * 100000)
    assert cost_of(str(legacy)) > cost_of(str(big_cc)) > cost_of(str(big_new)) > cost_of(str(tvm_new))
    assert cost_of(str(big_new)) == big_new.stat().st_size  # new form: its size only
    assert cost_of(str(big_cc)) == big_cc.stat().st_size  # C++: its size, whatever it holds
    assert cost_of(str(tmp_path / "gone.py")) == 0
