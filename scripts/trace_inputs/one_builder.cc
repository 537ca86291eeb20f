// One legacy argument list built for ptx_cp_async: what scripts/trace_call.py runs the C++ front end on.
#include <tvm/tir/builtin.h>
#include <tvm/tir/op.h>

namespace tvm {
namespace tl {

using namespace tir;

Stmt MakeCopy(const BufferStoreNode* store, const BufferLoadNode* load, PrimExpr dst_off, PrimExpr src_off,
              int bytes) {
  Array<PrimExpr> args = {store->buffer->data, dst_off, load->buffer->data, src_off, PrimExpr(bytes)};
  return Evaluate(Call(store->buffer->dtype, builtin::ptx_cp_async(), args));
}

}  // namespace tl
}  // namespace tvm
