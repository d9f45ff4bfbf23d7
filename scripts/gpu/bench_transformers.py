"""Hugging Face transformers on the same GPU as Ferrum's speed bench (issue 7): a random-weight model of the
given config (bf16, sdpa), `generate` with a static cache, greedy, EOS ignored. Prints TTFT (one new token)
and decode tokens/s at batch 1 and batch 8 for a 512-token prompt, and writes JSON.
  usage: python3 bench_transformers.py <config.json> <out.json> [new_tokens]
"""
import json
import sys
import time

import torch
from transformers import AutoConfig, AutoModelForCausalLM


def timed(fn):
    torch.cuda.synchronize()
    start = time.perf_counter()
    fn()
    torch.cuda.synchronize()
    return time.perf_counter() - start


def main():
    config_file, out_file = sys.argv[1], sys.argv[2]
    new_tokens = int(sys.argv[3]) if len(sys.argv) > 3 else 128
    with open(config_file) as f:
        config = AutoConfig.for_model(**json.load(f))
    torch.manual_seed(0)
    with torch.device("cuda"):
        model = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16, attn_implementation="sdpa")
    model.eval()
    results = {"transformers": __import__("transformers").__version__, "torch": torch.__version__,
               "newTokens": new_tokens, "promptTokens": 512}
    for batch in (1, 8):
        ids = torch.randint(1000, config.vocab_size - 1000, (batch, 512), device="cuda")
        mask = torch.ones_like(ids)

        def generate(n):
            return model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=n, min_new_tokens=n,
                                  do_sample=False, cache_implementation="static", pad_token_id=0)

        with torch.inference_mode():
            # Warm-up at the timed lengths: with a static cache, transformers 5 compiles the decode step
            # (torch.compile) per cache length on first use; a shorter warm-up left that compile inside the timing.
            generate(new_tokens)
            generate(1)
            ttft = min(timed(lambda: generate(1)) for _ in range(3))
            total = timed(lambda: generate(new_tokens))
        decode = batch * (new_tokens - 1) / (total - ttft)
        results[f"b{batch}"] = {"ttftMs": ttft * 1e3, "totalS": total, "decodeTokPerS": decode,
                                "outputTokPerS": batch * new_tokens / total}
        print(f"transformers batch {batch}: TTFT {ttft * 1e3:.1f} ms, decode {decode:.1f} tok/s, "
              f"{batch * new_tokens / total:.1f} output tok/s over {total:.2f} s", flush=True)
    with open(out_file, "w") as f:
        json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
