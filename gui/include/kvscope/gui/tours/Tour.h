// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QString>
#include <QStringList>
#include <optional>
#include <variant>
#include <vector>

class QByteArray;

namespace kvscope::gui {

/// When a tour's note applies: the prefill, a given step, the first event of a kind (optionally in one
/// layer), or the session's last step. Parsed from "prefill", "step 12", "first window_slide",
/// "first quantize_flush layer 3", "last".
struct TourTrigger {
    enum class Kind { Prefill, Step, FirstEvent, Last };
    Kind kind = Kind::Prefill;
    std::int64_t step = 0;
    /// The event kind's name (trace::toString), for FirstEvent.
    QString event;
    std::optional<std::int32_t> layer;

    /// The trigger, or nullopt with `error` naming the problem and the allowed forms.
    static std::optional<TourTrigger> parse(const QString& text, QString* error);
};

/// One sentence of a tour, shown from its trigger's step on. "{step}" in the text becomes that step.
struct TourNote {
    TourTrigger when;
    QString text;
};

/// A guided tour: a live session (the command-line options that start it, kvscope's own vocabulary) and
/// the notes that explain it as it steps. Built-in tours are resources/tours/<name>.json.
struct Tour {
    QString name;
    QString title;
    /// One or two sentences: what the tour shows and what to watch.
    QString summary;
    /// kvscope's options for the session, e.g. {"--preset", "mistral", "--tokens", "40"}.
    QStringList arguments;
    std::vector<TourNote> notes;

    /// Reads a tour from its JSON text; the error names the field and what is allowed.
    static std::variant<Tour, QString> fromJson(const QString& name, const QByteArray& json);
    /// The value of `--option` in the arguments (empty when absent).
    QString argument(const QString& option) const;
};

} // namespace kvscope::gui
