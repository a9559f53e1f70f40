// torch.special functions of one argument (unary_math.cc, util/special_math.h) against
// PyTorch's float64 values (torch 2.15), including the domain edges (0, negative arguments
// of y0/y1/k0/k1, entr of 0 and of negatives) and a large argument for the scaled forms.
#include <cmath>
#include <limits>

#include "gtest/gtest.h"
#include "test/kernels/portable/kernel_test_util.h"

namespace ember {
namespace testing {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNan = std::numeric_limits<double>::quiet_NaN();

struct SpecialCase {
  const char* op;
  std::vector<double> x, want;
};

TEST(SpecialUnary, MatchesPyTorchFloat64) {
  const SpecialCase cases[] = {
  {"aten::special_i0e.default", {-3.5, -0.7, 0.0, 0.3, 1.9, 8.0, 30.0}, {0.22280243801077917, 0.5593055265070683, 1.0, 0.7575806251825477, 0.31824316288914156, 0.1434317818568503, 0.0731459464822373}},
  {"aten::special_i1.default", {-3.5, -0.7, 0.0, 0.3, 1.9, 8.0, 30.0}, {-6.205834922258364, -0.37187967777700853, 0.0, 0.15169384000359282, 1.4482443730548886, 399.8731367825599, 768532038938.9569}},
  {"aten::special_i1e.default", {-3.5, -0.7, 0.0, 0.3, 1.9, 8.0, 30.0}, {-0.18739997660304997, -0.18466998276274726, 0.0, 0.11237756063983881, 0.2166119111747705, 0.13414249329269812, 0.07191633059864755}},
  {"aten::special_bessel_j0.default", {-3.5, -0.7, 0.0, 0.3, 1.9, 8.0, 30.0}, {-0.380127740076865, 0.8812008886074052, 1.0, 0.9776262465382961, 0.2818185593743899, 0.17165080909758512, -0.08636798358104034}},
  {"aten::special_bessel_j1.default", {-3.5, -0.7, 0.0, 0.3, 1.9, 8.0, 30.0}, {-0.13737752737296868, -0.3289957415400589, 0.0, 0.148318816273104, 0.5811570727134372, 0.2346363501030504, -0.11875106261662309}},
  {"aten::special_bessel_y0.default", {-3.5, -0.7, 0.0, 0.3, 1.9, 8.0, 30.0}, {kNan, kNan, -kInf, -0.8072735778045196, 0.49681997128383365, 0.22352148793012566, -0.11729573168666393}},
  {"aten::special_bessel_y1.default", {-3.5, -0.7, 0.0, 0.3, 1.9, 8.0, 30.0}, {kNan, kNan, -kInf, -2.2931051383885293, -0.16440577233159445, -0.15806045736166432, 0.08442557066174709}},
  {"aten::special_modified_bessel_i0.default", {-3.5, -0.7, 0.0, 0.3, 1.9, 8.0, 30.0}, {7.3782034322254795, 1.1263030183068092, 1.0, 1.0226268793515967, 2.1277401940538874, 427.56411572180474, 781672297823.9775}},
  {"aten::special_modified_bessel_i1.default", {-3.5, -0.7, 0.0, 0.3, 1.9, 8.0, 30.0}, {-6.205834922258364, -0.37187967777700853, 0.0, 0.15169384000359282, 1.4482443730548886, 399.8731367825599, 768532038938.9569}},
  {"aten::special_modified_bessel_k0.default", {-3.5, -0.7, 0.0, 0.3, 1.9, 8.0, 30.0}, {kNan, kNan, kInf, 1.3724600605442967, 0.1288459792760475, 0.00014647070522281542, 2.1324774964630563e-14}},
  {"aten::special_modified_bessel_k1.default", {-3.5, -0.7, 0.0, 0.3, 1.9, 8.0, 30.0}, {kNan, kNan, kInf, 3.055992033457325, 0.15966015303266767, 0.00015536921180500112, 2.1677320018915495e-14}},
  {"aten::special_scaled_modified_bessel_k0.default", {-3.5, -0.7, 0.0, 0.3, 1.9, 8.0, 30.0}, {kNan, kNan, kInf, 1.8526273007720135, 0.8614506167517557, 0.43662301860158614, 0.22788666561625373}},
  {"aten::special_scaled_modified_bessel_k1.default", {-3.5, -0.7, 0.0, 0.3, 1.9, 8.0, 30.0}, {kNan, kNan, kInf, 4.12515776224447, 1.0674709298145704, 0.46314909287049605, 0.2316541293777118}},
  {"aten::special_spherical_bessel_j0.default", {-3.5, -0.7, 0.0, 0.3, 1.9, 8.0, 30.0}, {-0.10022377933989138, 0.9203109817681301, 1.0, 0.9850673555377986, 0.49805267773021816, 0.12366978082792272, -0.03293438746976206}},
  {"aten::special_erfcx.default", {-3.5, -0.7, 0.0, 0.3, 1.9, 8.0, 30.0}, {417962.42244577035, 2.7387021025613167, 1.0, 0.7345993345676554, 0.26650937366167254, 0.06998516620088094, 0.018795888861416754}},
  {"aten::special_entr.default", {-3.5, -0.7, 0.0, 0.3, 1.9, 8.0, 30.0}, {-kInf, -kInf, 0.0, 0.3611918412977808, -1.21952238372755, -16.635532333438686, -102.03592144986466}},
  {"aten::special_log_ndtr.default", {-3.5, -0.7, 0.0, 0.3, 1.9, 8.0, 30.0}, {-8.366065308344094, -1.4189677615315315, -0.6931471805599453, -0.48141016158848127, -0.029136947845105753, -6.220960574271758e-16, -4.906713927148024e-198}},
  {"aten::special_ndtr.default", {-3.5, -0.7, 0.0, 0.3, 1.9, 8.0, 30.0}, {0.0002326290790355401, 0.24196365222307298, 0.5, 0.6179114221889527, 0.9712834401839983, 0.9999999999999993, 1.0}},
  {"aten::special_ndtri.default", {0.001, 0.2, 0.5, 0.9, 0.999}, {-3.090232306167813, -0.8416212335729142, 0.0, 1.2815515655446004, 3.090232306167813}},
  };
  for (const SpecialCase& c : cases) {
    KernelTest k;
    const int64_t n = static_cast<int64_t>(c.x.size());
    EValue* out = k.out(ScalarType::Float64, {n});
    ASSERT_EQ(k.run(c.op, {k.t(ScalarType::Float64, {n}, c.x), out}), Error::Ok) << c.op;
    std::vector<double> got = k.vals(out);
    for (int64_t i = 0; i < n; ++i) {
      const double w = c.want[i], g = got[i];
      if (std::isnan(w)) {
        EXPECT_TRUE(std::isnan(g)) << c.op << " at " << c.x[i] << ": got " << g;
      } else if (std::isinf(w)) {
        EXPECT_EQ(g, w) << c.op << " at " << c.x[i];
      } else {
        EXPECT_NEAR(g, w, 1e-7 * std::fabs(w) + 1e-12) << c.op << " at " << c.x[i];
      }
    }
  }
}

}  // namespace
}  // namespace testing
}  // namespace ember
