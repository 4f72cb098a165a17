#include "core/kernels/sass.h"

#include "gtest/gtest.h"

namespace pooch::kernels {
namespace {

constexpr const char* kText = R"(	.target	sm_90
//--------------------- .text.k            --------------------------
	.section	.text.k,"ax",@progbits
	.sectioninfo	@"SHI_REGISTERS=8"
        .other          k,@"STO_CUDA_ENTRY STV_DEFAULT"
k:
.text.k:
        /*0000*/                   LDC R1, c[0x0][0x28] ;
        /*0010*/              @!P0 BRA P1, `(.L_x_9) ;
        /*0020*/                   STG.E.128 desc[UR4][R4.64+0x10], R8.reuse ;
.L_x_9:
        /*0030*/                   CALL.REL.NOINC `($k$f) ;
$k$f:
        /*0040*/                   RET.REL.NODEC R4 `(k) ;
.L_x_10:
)";

TEST(Sass, ReadsInstructionsLabelsAndKernels) {
  const SassProgram p = ParseSass(kText);
  EXPECT_EQ(p.target, "sm_90");
  ASSERT_EQ(p.sections.size(), 1u);  // .sectioninfo is no section
  EXPECT_EQ(p.sections[0], ".text.k");
  ASSERT_EQ(p.kernels, std::vector<std::string>{"k"});
  ASSERT_EQ(p.instructions.size(), 5u);
  EXPECT_EQ(p.labels.at("k"), 0);
  EXPECT_EQ(p.labels.at(".L_x_9"), 3);
  EXPECT_EQ(p.labels.at("$k$f"), 4);
  EXPECT_FALSE(p.labels.contains(".L_x_10"));  // past the last instruction

  const Instruction& bra = p.instructions[1];
  EXPECT_EQ(bra.offset, 0x10);
  EXPECT_EQ(bra.guard, "@!P0");
  EXPECT_EQ(bra.Base(), "BRA");
  EXPECT_EQ(bra.target, ".L_x_9");
  ASSERT_EQ(bra.operands.size(), 2u);
  EXPECT_EQ(bra.operands[0], "P1");

  const Instruction& stg = p.instructions[2];
  EXPECT_EQ(stg.opcode, "STG.E.128");
  EXPECT_TRUE(stg.HasModifier("128"));
  EXPECT_FALSE(stg.HasModifier("STG"));
  EXPECT_EQ(stg.operands, (std::vector<std::string>{"desc[UR4][R4.64+0x10]", "R8"}));
  EXPECT_EQ(p.instructions[3].target, "$k$f");
}

}  // namespace
}  // namespace pooch::kernels
