/* Links the embedded math bitcode into a JIT module (see vm_llvm.h).
 * Unused functions are dropped before linking: the optimizer's time grows
 * with every function linked (MACHINE-FACTS: 7.5 ms -> 25 ms per kernel). */
#include <stdlib.h>
#include <string.h>

#include <llvm-c/BitReader.h>
#include <llvm-c/Linker.h>
#include <llvm-c/Transforms/PassBuilder.h>

#include "lower/vmath/vm_llvm.h"
#include "lower/vmath/vmath.h"

static char *vm_msg(const char *s)
{
    return LLVMCreateMessage(s);
}

static void vm_strip_target_attrs(LLVMValueRef f)
{
    static const char *const keys[] = {"target-cpu", "target-features", "tune-cpu"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        LLVMRemoveStringAttributeAtIndex(f, LLVMAttributeFunctionIndex, keys[i],
                                         (unsigned)strlen(keys[i]));
}

int ft_vm_link_into(LLVMModuleRef dst, char **err)
{
    LLVMContextRef ctx = LLVMGetModuleContext(dst);
    LLVMMemoryBufferRef buf = LLVMCreateMemoryBufferWithMemoryRange(
        (const char *)ft_vm_bitcode, ft_vm_bitcode_len, "ft_vm_bitcode", 0);
    LLVMModuleRef src = NULL;
    int bad = LLVMParseBitcodeInContext2(ctx, buf, &src);
    LLVMDisposeMemoryBuffer(buf);
    if (bad) {
        *err = vm_msg("ft_vm_link_into: cannot parse the embedded math bitcode");
        return 1;
    }
    /* Keep external only what dst asks for; globaldce drops the rest. */
    for (LLVMValueRef f = LLVMGetFirstFunction(src); f; f = LLVMGetNextFunction(f)) {
        if (LLVMIsDeclaration(f))
            continue;
        vm_strip_target_attrs(f);
        const char *name = LLVMGetValueName(f);
        if (!LLVMGetNamedFunction(dst, name))
            LLVMSetLinkage(f, LLVMInternalLinkage);
    }
    LLVMPassBuilderOptionsRef opts = LLVMCreatePassBuilderOptions();
    LLVMErrorRef perr = LLVMRunPasses(src, "globaldce", NULL, opts);
    LLVMDisposePassBuilderOptions(opts);
    if (perr) {
        *err = LLVMGetErrorMessage(perr);
        LLVMDisposeModule(src);
        return 1;
    }
    /* Remember what comes in, to internalize and inline it after linking. */
    size_t n = 0, cap = 16;
    char **names = malloc(cap * sizeof *names);
    for (LLVMValueRef f = LLVMGetFirstFunction(src); f && names; f = LLVMGetNextFunction(f)) {
        if (LLVMIsDeclaration(f))
            continue;
        if (n == cap) {
            char **nn = realloc(names, 2 * cap * sizeof *names);
            if (!nn)
                break;
            names = nn;
            cap *= 2;
        }
        names[n++] = strdup(LLVMGetValueName(f));
    }
    if (!names) {
        LLVMDisposeModule(src);
        *err = vm_msg("ft_vm_link_into: out of memory");
        return 1;
    }
    LLVMSetDataLayout(src, LLVMGetDataLayoutStr(dst));
    LLVMSetTarget(src, LLVMGetTarget(dst));
    if (LLVMLinkModules2(dst, src)) { /* src is destroyed either way */
        for (size_t i = 0; i < n; i++)
            free(names[i]);
        free(names);
        *err = vm_msg("ft_vm_link_into: linking the math bitcode failed");
        return 1;
    }
    unsigned inl = LLVMGetEnumAttributeKindForName("alwaysinline", 12);
    unsigned noinl = LLVMGetEnumAttributeKindForName("noinline", 8);
    for (size_t i = 0; i < n; i++) {
        LLVMValueRef f = names[i] ? LLVMGetNamedFunction(dst, names[i]) : NULL;
        free(names[i]);
        if (!f)
            continue;
        LLVMSetLinkage(f, LLVMInternalLinkage);
        /* zeta and polygamma (loops of pow calls, a 170-step factorial)
         * stay calls: inlined into every use they made a kernel's O2
         * compile take minutes. The bits are the same either way. */
        const char *nm = LLVMGetValueName(f);
        if (strstr(nm, "zeta") || strstr(nm, "polygamma") || strstr(nm, "igamma") ||
            strstr(nm, "vm_ig_") || strstr(nm, "betainc") || strstr(nm, "vm_bi_")) {
            LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex,
                                    LLVMCreateEnumAttribute(ctx, noinl, 0));
            continue;
        }
        LLVMRemoveEnumAttributeAtIndex(f, LLVMAttributeFunctionIndex, noinl);
        LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(ctx, inl, 0));
    }
    free(names);
    return 0;
}
