// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/models/LayerTableModel.h"

#include "GuiTestHelpers.h"

#include <QSignalSpy>

namespace kvscope::gui {
namespace {

using testing::WarningCollector;

TEST(LayerTableModelTest, PassesTheModelTesterAcrossSteps) {
    WarningCollector warnings;
    LayerTableModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::Warning);
    trace::Timeline timeline;
    synthetic::SyntheticSession::generate(testing::smallSession(60, true), timeline);
    for (std::int64_t step = 0; step < timeline.stepCount(); step += 7) {
        model.setState(timeline.snapshotAt(step));
    }
    model.setState(nullptr);
    model.setState(timeline.snapshotAt(0));
    EXPECT_TRUE(warnings.messages().isEmpty()) << warnings.messages().join('\n').toStdString();
}

TEST(LayerTableModelTest, ShowsEveryFieldOfTheLayer) {
    auto state = std::make_shared<trace::StepState>();
    trace::LayerState sliding;
    sliding.initialized = true;
    sliding.kind = trace::LayerKind::DynamicSlidingWindow;
    sliding.seqLength = 40;
    sliding.storedTokens = 16;
    sliding.kvLength = 17;
    sliding.kvOffset = 24;
    sliding.windowStart = 24;
    sliding.windowEnd = 40;
    sliding.windowSize = 16;
    sliding.bytesDevice = 2048;
    trace::LayerState quantized;
    quantized.initialized = true;
    quantized.kind = trace::LayerKind::Quantized;
    quantized.seqLength = 20;
    quantized.storedTokens = 20;
    quantized.residualTokens = 4;
    quantized.quantizedTokens = 16;
    quantized.residency = trace::Residency::Host;
    quantized.bytesHost = 1536;
    state->layers = {sliding, quantized};
    LayerTableModel model;
    model.setState(state);
    ASSERT_EQ(model.rowCount(), 2);
    ASSERT_EQ(model.columnCount(), LayerTableModel::ColumnCount);
    auto text = [&](int row, int column) { return model.index(row, column).data().toString().toStdString(); };
    EXPECT_EQ(text(0, LayerTableModel::Type), "dynamic_sliding_window");
    EXPECT_EQ(text(0, LayerTableModel::SeqLength), "40");
    EXPECT_EQ(text(0, LayerTableModel::Stored), "16 / ∞");
    EXPECT_EQ(text(0, LayerTableModel::KvLength), "17");
    EXPECT_EQ(text(0, LayerTableModel::KvOffset), "24");
    EXPECT_EQ(text(0, LayerTableModel::Window), "[24, 40) of 16");
    EXPECT_EQ(text(0, LayerTableModel::Residual), "–");
    EXPECT_EQ(text(0, LayerTableModel::DeviceBytes), "2.0 KiB");
    EXPECT_EQ(text(1, LayerTableModel::Residual), "4");
    EXPECT_EQ(text(1, LayerTableModel::Quantized), "16");
    EXPECT_EQ(text(1, LayerTableModel::Residency), "host");
    EXPECT_EQ(text(1, LayerTableModel::HostBytes), "1.5 KiB");
    EXPECT_EQ(model.index(1, LayerTableModel::Quantized).data(LayerTableModel::RawValueRole).toLongLong(), 16);
    EXPECT_EQ(model.headerData(LayerTableModel::KvOffset, Qt::Horizontal).toString(), "kv_offset");
}

TEST(LayerTableModelTest, LlamaCppLayersAreNamedWithTheirTypesAndShowTheirQuantizedTokens) {
    // llama.cpp's layers trace as dynamic ones; their flushes leave every stored token quantized.
    auto state = std::make_shared<trace::StepState>();
    trace::LayerState layer;
    layer.initialized = true;
    layer.kind = trace::LayerKind::Dynamic;
    layer.seqLength = 49;
    layer.storedTokens = 49;
    layer.quantizedTokens = 49;
    state->layers = {layer};
    LayerTableModel model;
    model.setState(state);
    auto text = [&](int column) { return model.index(0, column).data().toString().toStdString(); };
    EXPECT_EQ(text(LayerTableModel::Type), "dynamic");
    EXPECT_EQ(text(LayerTableModel::Quantized), "–");
    model.setLlamaCppTypes("q8_0", "q4_0");
    EXPECT_EQ(text(LayerTableModel::Type), "llamacpp q8_0/q4_0");
    EXPECT_EQ(text(LayerTableModel::Residual), "0");
    EXPECT_EQ(text(LayerTableModel::Quantized), "49");
    // Float types quantise nothing: no quantized count to show.
    model.setLlamaCppTypes("f16", "bf16");
    EXPECT_EQ(text(LayerTableModel::Type), "llamacpp f16/bf16");
    EXPECT_EQ(text(LayerTableModel::Quantized), "–");
    model.setLlamaCppTypes({}, {});
    EXPECT_EQ(text(LayerTableModel::Type), "dynamic");
}

TEST(LayerTableModelTest, SameLayerCountUpdatesInPlaceAndMarksChanges) {
    trace::Timeline timeline;
    synthetic::SyntheticSession::generate(testing::smallSession(20), timeline);
    LayerTableModel model;
    model.setState(timeline.snapshotAt(3));
    QSignalSpy resets(&model, &QAbstractItemModel::modelReset);
    QSignalSpy changes(&model, &QAbstractItemModel::dataChanged);
    model.setState(timeline.snapshotAt(4));
    EXPECT_EQ(resets.count(), 0);
    EXPECT_EQ(changes.count(), 1);
    // Seq length grew by one token: the cell is bold; the layer index did not change.
    EXPECT_TRUE(model.index(0, LayerTableModel::SeqLength).data(Qt::FontRole).value<QFont>().bold());
    EXPECT_FALSE(model.index(0, LayerTableModel::Layer).data(Qt::FontRole).isValid());
}

} // namespace
} // namespace kvscope::gui
