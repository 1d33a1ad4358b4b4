// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/views/WelcomePage.h"

#include "kvscope/config/DataDirectory.h"
#include "kvscope/gui/tours/TourCatalog.h"

#include <QCommandLinkButton>
#include <QDir>
#include <QFileInfo>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QScrollArea>
#include <QVBoxLayout>

#ifndef KVSCOPE_SESSIONS_DIR
#error "KVSCOPE_SESSIONS_DIR must point at the source tree's sessions/"
#endif

namespace kvscope::gui {

namespace {

// "llama-quantized-2bit.kvsess" → "llama quantized 2bit": the samples' names say what they hold.
QString sampleTitle(const QString& path) {
    return QFileInfo(path).completeBaseName().replace(QLatin1Char('-'), QLatin1Char(' '));
}

void clearLayout(QVBoxLayout* layout) {
    while (QLayoutItem* item = layout->takeAt(0)) {
        delete item->widget();
        delete item;
    }
}

} // namespace

WelcomePage::WelcomePage(QWidget* parent)
    : QWidget(parent), m_sampleList(new QVBoxLayout), m_recentList(new QVBoxLayout) {
    setObjectName(QStringLiteral("welcomePage"));
    auto* content = new QWidget;
    auto* columns = new QHBoxLayout(content);

    auto* tours = new QGroupBox(tr("Guided tours: one click to a live session, explained step by step"));
    auto* tourList = new QVBoxLayout(tours);
    for (const Tour& tour : TourCatalog::tours()) {
        auto* button = new QCommandLinkButton(tour.title, tour.summary);
        button->setObjectName(QStringLiteral("tour-") + tour.name);
        connect(button, &QCommandLinkButton::clicked, this,
                [this, name = tour.name] { Q_EMIT tourRequested(name); });
        tourList->addWidget(button);
    }
    tourList->addStretch(1);

    auto* side = new QVBoxLayout;
    auto* start = new QGroupBox(tr("Start"));
    auto* startList = new QVBoxLayout(start);
    auto* newSession = new QCommandLinkButton(
        tr("New session…"), tr("A model, a cache and a press of your choice, stepped live"));
    newSession->setObjectName(QStringLiteral("newSession"));
    auto* open = new QCommandLinkButton(tr("Open a session file…"), tr("Replay a saved .kvsess session"));
    open->setObjectName(QStringLiteral("openSession"));
    connect(newSession, &QCommandLinkButton::clicked, this, &WelcomePage::newSessionRequested);
    connect(open, &QCommandLinkButton::clicked, this, &WelcomePage::openRequested);
    startList->addWidget(newSession);
    startList->addWidget(open);
    auto* samples = new QGroupBox(tr("Sample sessions"));
    samples->setLayout(m_sampleList);
    auto* recent = new QGroupBox(tr("Recent sessions"));
    recent->setLayout(m_recentList);
    side->addWidget(start);
    side->addWidget(samples);
    side->addWidget(recent);
    side->addStretch(1);

    columns->addWidget(tours, 3);
    columns->addLayout(side, 2);

    auto* scroll = new QScrollArea;
    scroll->setWidget(content);
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    auto* layout = new QVBoxLayout(this);
    auto* heading =
        new QLabel(tr("<h2>kvscope</h2>See what a transformer's key-value cache keeps, drops, squeezes and "
                      "moves, token by token. Take a tour, open a sample, or start your own session."));
    heading->setWordWrap(true);
    layout->addWidget(heading);
    layout->addWidget(scroll, 1);
    setSampleFolder(defaultSampleFolder());
    setRecentFiles({});
}

QString WelcomePage::defaultSampleFolder() {
    return QString::fromStdString(
        config::DataDirectory::locate("sessions", nullptr, KVSCOPE_SESSIONS_DIR).string());
}

void WelcomePage::setSampleFolder(const QString& folder) {
    m_samples.clear();
    for (const QFileInfo& file :
         QDir(folder).entryInfoList({QStringLiteral("*.kvsess")}, QDir::Files, QDir::Name)) {
        m_samples << file.absoluteFilePath();
    }
    fillFiles(m_sampleList, m_samples, tr("No sample sessions found in %1").arg(folder));
}

void WelcomePage::setRecentFiles(const QStringList& paths) {
    fillFiles(m_recentList, paths, tr("None yet"));
}

void WelcomePage::fillFiles(QVBoxLayout* layout, const QStringList& paths, const QString& none) {
    clearLayout(layout);
    if (paths.isEmpty()) {
        layout->addWidget(new QLabel(none));
        return;
    }
    for (const QString& path : paths) {
        auto* button = new QPushButton(sampleTitle(path));
        button->setFlat(true);
        button->setStyleSheet(QStringLiteral("text-align: left;"));
        button->setToolTip(path);
        connect(button, &QPushButton::clicked, this, [this, path] { Q_EMIT fileRequested(path); });
        layout->addWidget(button);
    }
}

} // namespace kvscope::gui
