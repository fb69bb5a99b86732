/* Linking the shared math library's bitcode into a JIT module.
 * Only src/lower/ (and its tests) include llvm-c. */
#ifndef FT_VM_LLVM_H
#define FT_VM_LLVM_H

#include <llvm-c/Core.h>

/* Parses ft_vm_bitcode into dst's context and links into dst the math
 * functions dst declares (ft_vm_*_f32/f64) and what they need, nothing
 * else. The linked functions become internal and alwaysinline, and lose
 * clang's generic "target-cpu"/"target-features" attributes so that they
 * compile for the target machine the caller optimizes with.
 * Returns 0, or 1 with *err set to a message the caller frees with
 * LLVMDisposeMessage. */
int ft_vm_link_into(LLVMModuleRef dst, char **err);

#endif
