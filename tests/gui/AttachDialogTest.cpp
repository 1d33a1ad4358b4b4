// SPDX-License-Identifier: GPL-3.0-or-later
// File > Attach to server: OK only for settings that would start, with the reason shown otherwise.
#include "kvscope/gui/window/AttachDialog.h"

#include <QLineEdit>
#include <gtest/gtest.h>

namespace kvscope::gui {
namespace {

TEST(AttachDialogTest, SaysWhatIsMissingUntilTheSettingsWouldStart) {
    AttachDialog dialog(config::liveSessionSettings());
    EXPECT_EQ(dialog.problem(), "Give the server's KV events endpoint (tcp://HOST:PORT or ipc://PATH).");
    dialog.endpointField()->setText("localhost:5557");
    EXPECT_EQ(dialog.problem(), "The KV events endpoint must start with tcp:// or ipc://, e.g. tcp://127.0.0.1:5557.");
    dialog.endpointField()->setText(" tcp://127.0.0.1:5557 ");
    EXPECT_EQ(dialog.problem(), "");
    dialog.replayField()->setText("5558");
    EXPECT_TRUE(dialog.problem().startsWith("The replay endpoint must start with tcp:// or ipc://"));
    dialog.replayField()->setText("tcp://127.0.0.1:5558");
    dialog.metricsField()->setText("https://127.0.0.1:8000/metrics");
    EXPECT_TRUE(dialog.problem().startsWith("The metrics address must be plain HTTP"));
    dialog.metricsField()->setText("http://127.0.0.1:8000/metrics");
    dialog.topicField()->setText("kv");
    dialog.tokenizerField()->setText("/models/smollm2");
    EXPECT_EQ(dialog.problem(), "");
    const config::RunSettings settings = dialog.settings();
    ASSERT_TRUE(settings.attach.has_value());
    EXPECT_EQ(*settings.attach, (config::AttachSettings{"tcp://127.0.0.1:5557", "tcp://127.0.0.1:5558", "kv",
                                                        "http://127.0.0.1:8000/metrics", 0}));
    EXPECT_EQ(settings.tokenizerPath, "/models/smollm2");
    EXPECT_TRUE(settings.modelFile.empty() && settings.preset.empty()) << "the server runs the model";
}

TEST(AttachDialogTest, StartsFromTheLastAttachment) {
    config::RunSettings last = config::liveSessionSettings();
    last.attach = config::AttachSettings{"ipc:///tmp/events.pub", "", "", "", 0};
    last.tokenizerPath = "/models/t.json";
    AttachDialog dialog(last);
    EXPECT_EQ(dialog.endpointField()->text(), "ipc:///tmp/events.pub");
    EXPECT_EQ(dialog.tokenizerField()->text(), "/models/t.json");
    EXPECT_EQ(dialog.problem(), "");
}

} // namespace
} // namespace kvscope::gui
