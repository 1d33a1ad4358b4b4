# SPDX-License-Identifier: GPL-3.0-or-later
"""Plain-torch forward passes of the checkpoint families kvscope loads, written after Transformers'
modelling code (modeling_llama, _qwen2, _qwen3, _gemma, _gemma2, _gemma3, _phi3 and
modeling_rope_utils), eager attention, float32, no cache. Independent of kvscope's C++ decoder: the
checkpoint tests compare its logits with these.

A model is a dict of tensors by Hugging Face name plus the config.json dict.
"""

import math

import torch
import torch.nn.functional as F

GEMMA_TYPES = ("gemma", "gemma2", "gemma3_text")


# --- norms (LlamaRMSNorm / Qwen3RMSNorm, GemmaRMSNorm) -------------------------------------------

def llama_rms_norm(x, weight, eps):
    variance = x.pow(2).mean(-1, keepdim=True)
    return weight * (x * torch.rsqrt(variance + eps))


def gemma_rms_norm(x, weight, eps):
    output = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
    return output * (1.0 + weight.float())


# --- rotary embeddings (modeling_rope_utils) -------------------------------------------------------

def default_inv_freq(base, dim):
    return 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))


def linear_inv_freq(base, dim, rope_scaling):
    return default_inv_freq(base, dim) / rope_scaling["factor"]


def llama3_inv_freq(base, dim, rope_scaling):
    inv_freq = default_inv_freq(base, dim)
    factor = rope_scaling["factor"]
    low_freq_factor = rope_scaling["low_freq_factor"]
    high_freq_factor = rope_scaling["high_freq_factor"]
    old_context_len = rope_scaling["original_max_position_embeddings"]
    low_freq_wavelen = old_context_len / low_freq_factor
    high_freq_wavelen = old_context_len / high_freq_factor
    wavelen = 2 * math.pi / inv_freq
    inv_freq_llama = torch.where(wavelen > low_freq_wavelen, inv_freq / factor, inv_freq)
    smooth_factor = (old_context_len / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor)
    smoothed_inv_freq = (1 - smooth_factor) * inv_freq_llama / factor + smooth_factor * inv_freq_llama
    is_medium_freq = ~(wavelen < high_freq_wavelen) * ~(wavelen > low_freq_wavelen)
    return torch.where(is_medium_freq, smoothed_inv_freq, inv_freq_llama)


def inv_freq_of(base, dim, rope_scaling):
    kind = None if rope_scaling is None else rope_scaling.get("rope_type", rope_scaling.get("type"))
    if kind in (None, "default"):
        return default_inv_freq(base, dim)
    if kind == "linear":
        return linear_inv_freq(base, dim, rope_scaling)
    if kind == "llama3":
        return llama3_inv_freq(base, dim, rope_scaling)
    raise ValueError("the reference computes default, linear and llama3 rope only, not " + kind)


def rotary_cos_sin(inv_freq, position_ids):
    inv_freq_expanded = inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1)
    position_ids_expanded = position_ids[:, None, :].float()
    freqs = (inv_freq_expanded @ position_ids_expanded).transpose(1, 2)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin()


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin):
    """Phi-3's version, which leaves the channels past cos's width unrotated (the same as Llama's
    when every channel rotates)."""
    cos = cos.unsqueeze(1)
    sin = sin.unsqueeze(1)
    rotary_dim = cos.shape[-1]
    q_rot, q_pass = q[..., :rotary_dim], q[..., rotary_dim:]
    k_rot, k_pass = k[..., :rotary_dim], k[..., rotary_dim:]
    q_embed = torch.cat([(q_rot * cos) + (rotate_half(q_rot) * sin), q_pass], dim=-1)
    k_embed = torch.cat([(k_rot * cos) + (rotate_half(k_rot) * sin), k_pass], dim=-1)
    return q_embed, k_embed


# --- attention --------------------------------------------------------------------------------------

def repeat_kv(hidden_states, n_rep):
    batch, heads, length, head_dim = hidden_states.shape
    if n_rep == 1:
        return hidden_states
    hidden_states = hidden_states[:, :, None, :, :].expand(batch, heads, n_rep, length, head_dim)
    return hidden_states.reshape(batch, heads * n_rep, length, head_dim)


def causal_mask(length, sliding_window):
    """masking_utils: causal, and with a window only the last `sliding_window` keys (self included)."""
    q = torch.arange(length)[:, None]
    kv = torch.arange(length)[None, :]
    allowed = kv <= q
    if sliding_window is not None:
        allowed = allowed & (kv > q - sliding_window)
    return allowed


def eager_attention(query, key, value, allowed, scaling, softcap, groups):
    key_states = repeat_kv(key, groups)
    value_states = repeat_kv(value, groups)
    attn_weights = torch.matmul(query, key_states.transpose(2, 3)) * scaling
    if softcap is not None:
        attn_weights = attn_weights / softcap
        attn_weights = torch.tanh(attn_weights)
        attn_weights = attn_weights * softcap
    mask = torch.zeros(allowed.shape).masked_fill(~allowed, torch.finfo(torch.float32).min)
    attn_weights = attn_weights + mask
    attn_weights = F.softmax(attn_weights, dim=-1, dtype=torch.float32)
    output = torch.matmul(attn_weights, value_states)
    return output.transpose(1, 2).contiguous()


# --- the families ----------------------------------------------------------------------------------

class Family:
    """What distinguishes the families' modelling code, read off the config as Transformers does."""

    def __init__(self, config):
        kind = config["model_type"]
        self.kind = kind
        self.layers = config["num_hidden_layers"]
        self.heads = config["num_attention_heads"]
        self.kv_heads = config.get("num_key_value_heads", self.heads)
        self.head_dim = config.get("head_dim") or config["hidden_size"] // self.heads
        self.eps = config["rms_norm_eps"]
        self.gemma = kind in GEMMA_TYPES
        self.sandwich = kind in ("gemma2", "gemma3_text")
        self.qk_norm = kind in ("qwen3", "gemma3_text")
        self.fused = kind == "phi3"
        self.qkv_bias = kind == "qwen2" or config.get("attention_bias", False)
        self.norm = gemma_rms_norm if self.gemma else llama_rms_norm
        default_tied = self.gemma
        self.tied = config.get("tie_word_embeddings", default_tied)
        act = config.get("hidden_activation") or config.get("hidden_act", "silu")
        self.act = {"silu": F.silu, "gelu": F.gelu,
                    "gelu_pytorch_tanh": lambda x: F.gelu(x, approximate="tanh")}[act]
        if kind in ("gemma2", "gemma3_text"):
            self.scaling = config["query_pre_attn_scalar"] ** -0.5
        else:
            self.scaling = self.head_dim ** -0.5
        self.attn_softcap = config.get("attn_logit_softcapping")
        self.final_softcap = config.get("final_logit_softcapping")
        self.layer_types = self._layer_types(config)
        self.window = config.get("sliding_window")
        rotary_dim = int(self.head_dim * config.get("partial_rotary_factor", 1.0))
        self.inv_freq = inv_freq_of(config.get("rope_theta", 10000.0), rotary_dim, config.get("rope_scaling"))
        if kind == "gemma3_text":
            # Gemma3TextModel's rotary_emb_local: the local base, default rope.
            self.local_inv_freq = default_inv_freq(config.get("rope_local_base_freq", 10000.0), rotary_dim)
        else:
            self.local_inv_freq = None

    def _layer_types(self, config):
        if config.get("layer_types"):
            return config["layer_types"]
        if self.kind == "gemma2":
            return ["sliding_attention" if bool((i + 1) % 2) else "full_attention" for i in range(self.layers)]
        if self.kind == "gemma3_text":
            pattern = config.get("sliding_window_pattern", 6)
            return ["sliding_attention" if bool((i + 1) % pattern) else "full_attention" for i in range(self.layers)]
        if self.kind in ("qwen2", "qwen3"):
            window = config.get("sliding_window") if config.get("use_sliding_window", False) else None
            first = config.get("max_window_layers", 28)
            return ["sliding_attention" if window is not None and i >= first else "full_attention"
                    for i in range(self.layers)]
        sliding = config.get("sliding_window") is not None
        return ["sliding_attention" if sliding else "full_attention"] * self.layers


def attention_block(family, w, p, hidden, cos_sin, allowed):
    batch, length, _ = hidden.shape
    hidden_shape = (batch, length, -1, family.head_dim)
    if family.fused:
        qkv = F.linear(hidden, w[p + "qkv_proj.weight"])
        query_pos = family.heads * family.head_dim
        kv_width = family.kv_heads * family.head_dim
        query = qkv[..., :query_pos]
        key = qkv[..., query_pos:query_pos + kv_width]
        value = qkv[..., query_pos + kv_width:]
    else:
        bias = (lambda name: w[p + name + ".bias"]) if family.qkv_bias else (lambda name: None)
        query = F.linear(hidden, w[p + "q_proj.weight"], bias("q_proj"))
        key = F.linear(hidden, w[p + "k_proj.weight"], bias("k_proj"))
        value = F.linear(hidden, w[p + "v_proj.weight"], bias("v_proj"))
    query = query.view(hidden_shape)
    key = key.view(hidden_shape)
    if family.qk_norm:
        query = family.norm(query, w[p + "q_norm.weight"], family.eps)
        key = family.norm(key, w[p + "k_norm.weight"], family.eps)
    query = query.transpose(1, 2)
    key = key.transpose(1, 2)
    value = value.view(hidden_shape).transpose(1, 2)
    cos, sin = cos_sin
    query, key = apply_rotary_pos_emb(query, key, cos, sin)
    output = eager_attention(query, key, value, allowed, family.scaling, family.attn_softcap,
                             family.heads // family.kv_heads)
    return F.linear(output.reshape(batch, length, -1), w[p + "o_proj.weight"])


def mlp_block(family, w, p, hidden):
    if family.fused:
        up_states = F.linear(hidden, w[p + "gate_up_proj.weight"])
        gate, up_states = up_states.chunk(2, dim=-1)
        return F.linear(up_states * family.act(gate), w[p + "down_proj.weight"])
    gate = family.act(F.linear(hidden, w[p + "gate_proj.weight"]))
    return F.linear(gate * F.linear(hidden, w[p + "up_proj.weight"]), w[p + "down_proj.weight"])


def forward(config, w, input_ids):
    """Logits [batch, tokens, vocab] of `input_ids` [batch, tokens], no padding, no cache."""
    family = Family(config)
    batch, length = input_ids.shape
    position_ids = torch.arange(length)[None, :].expand(batch, -1)
    global_rotary = rotary_cos_sin(family.inv_freq, position_ids)
    local_rotary = rotary_cos_sin(family.local_inv_freq, position_ids) if family.local_inv_freq is not None else None

    hidden = F.embedding(input_ids, w["model.embed_tokens.weight"])
    if family.gemma:
        hidden = hidden * torch.tensor(config["hidden_size"] ** 0.5, dtype=hidden.dtype)
    for layer in range(family.layers):
        p = "model.layers.%d." % layer
        sliding = family.layer_types[layer] == "sliding_attention"
        allowed = causal_mask(length, family.window if sliding else None)
        rotary = local_rotary if sliding and local_rotary is not None else global_rotary
        residual = hidden
        normed = family.norm(hidden, w[p + "input_layernorm.weight"], family.eps)
        attended = attention_block(family, w, p + "self_attn.", normed, rotary, allowed)
        if family.sandwich:
            attended = family.norm(attended, w[p + "post_attention_layernorm.weight"], family.eps)
            hidden = residual + attended
            residual = hidden
            normed = family.norm(hidden, w[p + "pre_feedforward_layernorm.weight"], family.eps)
            fed = family.norm(mlp_block(family, w, p + "mlp.", normed), w[p + "post_feedforward_layernorm.weight"],
                              family.eps)
            hidden = residual + fed
        else:
            hidden = residual + attended
            residual = hidden
            normed = family.norm(hidden, w[p + "post_attention_layernorm.weight"], family.eps)
            hidden = residual + mlp_block(family, w, p + "mlp.", normed)
    hidden = family.norm(hidden, w["model.norm.weight"], family.eps)
    head = w["model.embed_tokens.weight"] if family.tied else w["lm_head.weight"]
    logits = F.linear(hidden, head)
    if family.final_softcap is not None:
        logits = logits / family.final_softcap
        logits = torch.tanh(logits)
        logits = logits * family.final_softcap
    return logits
