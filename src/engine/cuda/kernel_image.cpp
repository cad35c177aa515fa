// The fatbin is included by the assembler: no multi-megabyte array for the
// C++ compiler to parse. Make builds cuda/loom_kernels.fatbin first.
#include "engine/cuda/kernel_image.hpp"

__asm__(
    ".section .rodata\n"
    ".balign 16\n"
    ".globl loom_kernel_image\n"
    ".hidden loom_kernel_image\n"
    "loom_kernel_image:\n"
    ".incbin \"cuda/loom_kernels.fatbin\"\n"
    ".globl loom_kernel_image_end\n"
    ".hidden loom_kernel_image_end\n"
    "loom_kernel_image_end:\n"
    ".byte 0\n"
    ".previous\n");
