// SPDX-License-Identifier: GPL-3.0-or-later
// Every press kvscope offers, one line each, in the order lists show them: KVSCOPE_PRESS(name), where
// engine/presses/ holds the press's file defining KVSCOPE_PRESS_DESCRIPTION(name) and
// KVSCOPE_PRESS_FACTORY(name) (docs/presses.md, "Adding a press"). Included by the registries of
// kvscope_config and kvscope_press, each defining KVSCOPE_PRESS first; deliberately no include guard.
KVSCOPE_PRESS(streaming_llm)
KVSCOPE_PRESS(knorm)
KVSCOPE_PRESS(snapkv)
KVSCOPE_PRESS(tova)
KVSCOPE_PRESS(pyramidkv)
KVSCOPE_PRESS(observed_attention)
KVSCOPE_PRESS(expected_attention)
KVSCOPE_PRESS(random)
KVSCOPE_PRESS(adakv)
KVSCOPE_PRESS(decoding)
KVSCOPE_PRESS(h2o)
KVSCOPE_PRESS(chunkkv)
KVSCOPE_PRESS(chunk)
KVSCOPE_PRESS(block)
KVSCOPE_PRESS(criticalkv)
KVSCOPE_PRESS(criticaladakv)
KVSCOPE_PRESS(per_layer_compression)
KVSCOPE_PRESS(composed)
KVSCOPE_PRESS(key_rerotation)
KVSCOPE_PRESS(prefill_decoding)
KVSCOPE_PRESS(compression_ratio_decoding)
