# SPDX-License-Identifier: GPL-3.0-or-later
"""A small torch decoder that uses a Transformers cache the way Transformers' models do.

Per forward: `get_seq_length` for the positions, per layer `get_mask_sizes` for the mask and
`update` for the keys and values, then attention over what the cache returns. It lets the tests
record generation through DynamicCache, sliding-window, quantized and offloading caches without
downloading a model, and measure the recorder's overhead on a model of realistic shape.
"""

import math

import torch
from torch import nn


class Config:
    """What the recorder reads from a model config: attributes and `to_dict`."""

    def __init__(self, vocab_size=256, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                 sliding_window=None, _name_or_path="tiny-decoder"):
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.num_hidden_layers = num_hidden_layers
        self.num_attention_heads = num_attention_heads
        self.sliding_window = sliding_window
        self._name_or_path = _name_or_path

    def to_dict(self):
        return {k: v for k, v in vars(self).items() if not k.startswith("_")}

    def get_text_config(self, decoder=True):
        return self


class Output:
    def __init__(self, logits, past_key_values):
        self.logits = logits
        self.past_key_values = past_key_values


class Layer(nn.Module):
    def __init__(self, config, index):
        super().__init__()
        self.index = index
        self.heads = config.num_attention_heads
        self.head_dim = config.hidden_size // config.num_attention_heads
        self.qkv = nn.Linear(config.hidden_size, 3 * config.hidden_size, bias=False)
        self.out = nn.Linear(config.hidden_size, config.hidden_size, bias=False)
        self.mlp = nn.Sequential(nn.Linear(config.hidden_size, 2 * config.hidden_size), nn.GELU(),
                                 nn.Linear(2 * config.hidden_size, config.hidden_size))
        self.norm1 = nn.LayerNorm(config.hidden_size)
        self.norm2 = nn.LayerNorm(config.hidden_size)

    def forward(self, x, cache):
        batch, length, hidden = x.shape
        kv_length, kv_offset = cache.get_mask_sizes(length, self.index)
        q, k, v = self.qkv(self.norm1(x)).split(hidden, dim=-1)
        shape = (batch, length, self.heads, self.head_dim)
        q, k, v = (t.reshape(shape).transpose(1, 2) for t in (q, k, v))
        keys, values = cache.update(k, v, self.index)
        scores = q @ keys.transpose(-1, -2) / math.sqrt(self.head_dim)
        # Causal within what the cache returned: the last `length` keys are the new tokens.
        total = keys.shape[-2]
        mask = torch.ones(length, total, dtype=torch.bool).tril(total - length)
        scores = scores.masked_fill(~mask, float("-inf"))
        attended = (scores.softmax(-1) @ values).transpose(1, 2).reshape(batch, length, hidden)
        x = x + self.out(attended)
        return x + self.mlp(self.norm2(x))


class TinyDecoder(nn.Module):
    def __init__(self, config, seed=0):
        super().__init__()
        torch.manual_seed(seed)
        self.config = config
        self.embed = nn.Embedding(config.vocab_size, config.hidden_size)
        self.layers = nn.ModuleList(Layer(config, i) for i in range(config.num_hidden_layers))
        self.head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)

    def forward(self, input_ids=None, past_key_values=None, **kwargs):
        cache = past_key_values
        start = cache.get_seq_length()
        x = self.embed(input_ids) + 0.0 * start
        for layer in self.layers:
            x = layer(x, cache)
        return Output(self.head(x), cache)

    @torch.no_grad()
    def generate(self, input_ids, past_key_values, max_new_tokens):
        """Greedy decoding, one forward per token, as Transformers' generate does with a cache."""
        tokens = input_ids
        step_input = input_ids
        for _ in range(max_new_tokens):
            logits = self(input_ids=step_input, past_key_values=past_key_values).logits
            step_input = logits[:, -1:].argmax(-1)
            tokens = torch.cat([tokens, step_input], dim=-1)
        return tokens


class ByteTokenizer:
    """Decodes token ids as characters: enough for text pieces in a session."""

    def decode(self, ids):
        return "".join(chr(32 + int(i) % 95) for i in ids)
