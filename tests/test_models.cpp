// The models: exact sizes, shapes, determinism, trainability and agreement of the variants that
// the catalog's experiments switch between. Only tiny presets run forwards here.
#include <gtest/gtest.h>

#include "models/build.h"
#include "models/dlrm.h"
#include "models/gpt.h"
#include "models/registry.h"
#include "models/resnet.h"

namespace tunebench::models {
namespace {

constexpr uint64_t kSeed = 1234;

std::unique_ptr<BenchModel> build(const std::string& model, const std::string& preset,
                                  nlohmann::json options = nlohmann::json::object(),
                                  uint64_t seed = kSeed) {
  return build_model({model, preset, std::move(options)}, seed);
}

// Sum of the weight elements of every Linear layer in a built module.
int64_t linear_weight_elements(torch::nn::Module& m) {
  int64_t total = 0;
  for (const auto& sub : m.modules()) {
    if (auto* lin = sub->as<torch::nn::Linear>()) total += lin->weight.numel();
  }
  return total;
}

TEST(ParameterCounts, PublishedSizes) {
  EXPECT_EQ(summarize({"resnet50", "full"}).parameters, 25'557'032);
  EXPECT_EQ(summarize({"gpt", "gpt2"}).parameters, 124'439'808);
  // Criteo Kaggle: 33,762,577 rows × 16 = 540,201,232 embedding parameters, plus the bottom MLP
  // 13-512-256-64-16 (155,984) and the top MLP 367-512-256-1 (320,001).
  const auto kaggle = summarize({"dlrm", "kaggle"});
  EXPECT_EQ(kaggle.parameters, 540'201'232 + 155'984 + 320'001);
  EXPECT_EQ(kaggle.parameters_published, kaggle.parameters);
  EXPECT_EQ(kaggle.config["top_mlp"], "367-512-256-1");
  EXPECT_EQ(kaggle.config["bottom_mlp"], "13-512-256-64-16");
}

TEST(ParameterCounts, RowCapShrinksTablesButKeepsThePublishedCount) {
  const auto capped = summarize({"dlrm", "kaggle", {{"row_cap", 1000}}});
  EXPECT_EQ(capped.parameters_published, 540'201'232 + 155'984 + 320'001);
  int64_t rows = 0;
  for (int64_t r : criteo_kaggle_table_rows()) rows += std::min<int64_t>(r, 1000);
  EXPECT_EQ(capped.parameters, rows * 16 + 155'984 + 320'001);
  EXPECT_NE(capped.note.find("capped at 1,000"), std::string::npos) << capped.note;
}

// The sizes computed from a configuration match the modules actually built.
TEST(ParameterCounts, SummaryMatchesBuiltModule) {
  const std::vector<ModelSpec> specs{
      {"resnet50", "tiny"},
      {"resnet50", "full"},
      {"resnet50", "tiny", {{"conv_bias", true}}},
      {"gpt", "tiny"},
      {"gpt", "tiny", {{"vocab_pad", true}}},
      {"gpt", "small"},
      {"dlrm", "tiny"},
      {"dlrm", "kaggle", {{"row_cap", 500}}},
  };
  for (const auto& spec : specs) {
    auto model = build_model(spec, kSeed);
    EXPECT_EQ(count_parameters(model->module()), summarize(spec).parameters)
        << spec.model << "/" << spec.preset << " " << spec.options.dump();
  }
}

TEST(ParameterCounts, ConvBiasAddsOneBiasPerConvOutputChannel) {
  auto plain = build("resnet50", "tiny");
  auto biased = build("resnet50", "tiny", {{"conv_bias", true}});
  int64_t conv_channels = 0;
  for (const auto& m : plain->module().modules()) {
    if (auto* c = m->as<torch::nn::Conv2d>()) {
      EXPECT_FALSE(c->bias.defined());
      conv_channels += c->options.out_channels();
    }
  }
  EXPECT_EQ(count_parameters(biased->module()) - count_parameters(plain->module()), conv_channels);
}

TEST(Flops, ResNet50MatchesThePublishedCount) {
  // torchvision: ResNet-50 at 224×224 is 4.09 G multiply-accumulates.
  const double macs = summarize({"resnet50", "full"}).forward_flops / 2;
  EXPECT_NEAR(macs / 4.09e9, 1.0, 0.01);
}

TEST(Flops, GptAndDlrmCountEveryLinearLayerOfTheBuiltModel) {
  auto gpt = build("gpt", "tiny");
  const auto gpt_cfg = summarize({"gpt", "tiny"}).config;
  const int64_t T = gpt_cfg["seq_len"], C = gpt_cfg["n_embd"], V = gpt_cfg["vocab_size"],
                L = gpt_cfg["n_layer"];
  // linear layers per token + tied output projection per token + q kᵀ and att·v per layer
  const double expected_gpt =
      2.0 * T * (linear_weight_elements(gpt->module()) + C * V) + L * 2.0 * (2.0 * T * T * C);
  EXPECT_DOUBLE_EQ(summarize({"gpt", "tiny"}).forward_flops, expected_gpt);

  auto dlrm = build("dlrm", "tiny");
  const DlrmConfig& cfg = dynamic_cast<DlrmModel&>(*dlrm).net->config;
  const int64_t F = 1 + cfg.table_rows.size(), d = cfg.embedding_dim();
  const double expected_dlrm = 2.0 * linear_weight_elements(dlrm->module()) +
                               cfg.table_rows.size() * double(cfg.pooling - 1) * d +
                               2.0 * F * F * d;
  EXPECT_DOUBLE_EQ(summarize({"dlrm", "tiny"}).forward_flops, expected_dlrm);
}

TEST(Shapes, ForwardOutputs) {
  torch::NoGradGuard no_grad;
  auto resnet = build("resnet50", "tiny");
  EXPECT_EQ(resnet->forward(resnet->make_batch(3, 1)).sizes(), (std::vector<int64_t>{3, 10}));

  auto gpt = build("gpt", "tiny");
  EXPECT_EQ(gpt->forward(gpt->make_batch(2, 1)).sizes(), (std::vector<int64_t>{2, 32, 101}));
  auto padded = build("gpt", "tiny", {{"vocab_pad", true}});
  EXPECT_EQ(padded->forward(padded->make_batch(2, 1)).sizes(), (std::vector<int64_t>{2, 32, 101}));
  EXPECT_EQ(dynamic_cast<GptModel&>(*padded).net->wte->weight.size(0), 128);

  auto dlrm = build("dlrm", "tiny");
  auto p = dlrm->forward(dlrm->make_batch(5, 1));
  EXPECT_EQ(p.sizes(), (std::vector<int64_t>{5, 1}));
  EXPECT_TRUE((p > 0).all().item<bool>() && (p < 1).all().item<bool>());
}

TEST(Determinism, SameSeedsSameOutputsDifferentSeedsDifferent) {
  torch::NoGradGuard no_grad;
  for (const std::string model : {"resnet50", "gpt", "dlrm"}) {
    auto a = build(model, "tiny"), b = build(model, "tiny"),
         c = build(model, "tiny", {}, kSeed + 1);
    const auto batch = a->make_batch(4, 7);
    const auto same_batch = b->make_batch(4, 7);
    for (size_t i = 0; i < batch.inputs.size(); ++i) {
      EXPECT_TRUE(torch::equal(batch.inputs[i], same_batch.inputs[i])) << model;
    }
    EXPECT_FALSE(torch::equal(batch.inputs[0], a->make_batch(4, 8).inputs[0])) << model;
    EXPECT_TRUE(torch::equal(a->forward(batch), b->forward(same_batch))) << model;
    EXPECT_FALSE(torch::allclose(a->forward(batch), c->forward(batch))) << model;
  }
}

TEST(Training, AFewStepsOnOneBatchLowerTheLoss) {
  for (const std::string model : {"resnet50", "gpt", "dlrm"}) {
    auto m = build(model, "tiny");
    m->module().train();
    const auto batch = m->make_batch(8, 3);
    torch::optim::Adam opt(m->module().parameters(), torch::optim::AdamOptions(3e-3));
    double first = 0, last = 0;
    for (int step = 0; step < 8; ++step) {
      opt.zero_grad();
      auto loss = m->loss(batch);
      loss.backward();
      opt.step();
      (step == 0 ? first : last) = loss.item<double>();
    }
    EXPECT_LT(last, 0.9 * first) << model << ": " << first << " -> " << last;
  }
}

TEST(Dlrm, IndicesFollowAPowerLawAndRespectTheRowCap) {
  DlrmConfig cfg;
  cfg.bottom_mlp = {4};
  cfg.top_mlp = {1};
  cfg.table_rows = {10000};
  DlrmModel model(cfg);
  const auto indices = model.make_batch(10000, 5).inputs[1][0];
  // Uniform indices would put 0.1 % of lookups in the first 10 rows; the power law puts ~30 %.
  const double hot = (indices < 10).to(torch::kDouble).mean().item<double>();
  EXPECT_GT(hot, 0.2);
  EXPECT_LT(hot, 0.4);
  EXPECT_EQ(indices.max().item<int64_t>() < 10000, true);

  cfg.row_cap = 100;
  DlrmModel capped(cfg);
  EXPECT_LT(capped.make_batch(1000, 5).inputs[1].max().item<int64_t>(), 100);
}

// The hand-written and built-in forms of each GPT switch compute the same function.
TEST(Variants, GptHandWrittenAndBuiltInAgree) {
  torch::NoGradGuard no_grad;
  auto reference =
      build("gpt", "tiny",
            {{"builtin_ops", false}, {"fused_attention", false}, {"causal_mask_fly", false}});
  const auto batch = reference->make_batch(2, 11);
  const auto expected = reference->forward(batch);
  for (bool builtin : {false, true}) {
    for (bool fused : {false, true}) {
      for (bool fly : {false, true}) {
        auto m =
            build("gpt", "tiny",
                  {{"builtin_ops", builtin}, {"fused_attention", fused}, {"causal_mask_fly", fly}});
        EXPECT_TRUE(torch::allclose(m->forward(batch), expected, 1e-4, 1e-5))
            << "builtin_ops=" << builtin << " fused_attention=" << fused
            << " causal_mask_fly=" << fly;
      }
    }
  }
}

TEST(Variants, GptCausalityHoldsInEveryVariant) {
  torch::NoGradGuard no_grad;
  for (bool fused : {false, true}) {
    for (bool fly : {false, true}) {
      auto m = build("gpt", "tiny", {{"fused_attention", fused}, {"causal_mask_fly", fly}});
      auto batch = m->make_batch(1, 2);
      auto before = m->forward(batch);
      batch.inputs[0][0][20] =
          (batch.inputs[0][0][20].item<int64_t>() + 1) % 101;  // change token 20
      auto after = m->forward(batch);
      EXPECT_TRUE(torch::equal(before.narrow(1, 0, 20), after.narrow(1, 0, 20)))
          << "fused=" << fused << " fly=" << fly << ": a later token changed an earlier output";
      EXPECT_FALSE(torch::allclose(before.narrow(1, 20, 1), after.narrow(1, 20, 1)));
    }
  }
}

TEST(Variants, VocabPaddingKeepsTheFunction) {
  // The same seed draws the same weights for the real vocabulary, so the padded model computes the
  // same logits without any copying.
  torch::NoGradGuard no_grad;
  auto plain = build("gpt", "tiny");
  auto padded = build("gpt", "tiny", {{"vocab_pad", true}});
  const auto batch = plain->make_batch(2, 4);
  EXPECT_TRUE(torch::allclose(plain->forward(batch), padded->forward(batch), 1e-5, 1e-6));
  EXPECT_EQ(padded->describe()["vocab_rows"], 128);
  EXPECT_EQ(plain->describe()["vocab_rows"], 101);
}

TEST(Variants, ResNetInPlaceActivationsGiveTheSameOutputsAndGradients) {
  auto plain = build("resnet50", "tiny");
  auto inplace = build("resnet50", "tiny", {{"inplace_act", true}});
  const auto batch = plain->make_batch(4, 9);
  auto l1 = plain->loss(batch), l2 = inplace->loss(batch);
  EXPECT_TRUE(torch::allclose(l1, l2));
  l1.backward();
  l2.backward();
  auto g1 = plain->module().parameters(), g2 = inplace->module().parameters();
  ASSERT_EQ(g1.size(), g2.size());
  for (size_t i = 0; i < g1.size(); ++i) {
    EXPECT_TRUE(torch::allclose(g1[i].grad(), g2[i].grad(), 1e-4, 1e-6)) << "parameter " << i;
  }
}

}  // namespace
}  // namespace tunebench::models
