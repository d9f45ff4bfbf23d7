"""Random-weight model of a real shape + transformers reference logits for a mixed serving schedule.

Phase `make`: builds the model from a config.json with transformers' own init (seeded, on the GPU, bf16),
saves it with save_pretrained, defines a schedule (chunked prefill, a prefix-cache hit, decode steps) and
stores transformers' bf16 (sdpa) logits of every sampled row. Phase `compare`: reads Ferrum's logits for
the same rows (f32, row-major, written by run-schedule.ts) and prints mean KL and top-1 agreement.
"""
import argparse, json, os, sys, time
import torch
import torch.nn.functional as F


def schedule(vocab: int, gen: torch.Generator):
    rand = lambda n: torch.randint(0, vocab, (n,), generator=gen).tolist()
    a = rand(300)
    seqs = {
        "A": a + rand(10),
        "B": rand(180) + rand(10),
        "C": a[:128] + rand(72) + rand(10),  # shares A's first 128 tokens: prefilled from A's cached slots
        "D": rand(40) + rand(10),
    }
    steps = [
        [("A", 0, 256), ("B", 0, 180)],
        [("A", 256, 44), ("B", 180, 1), ("D", 0, 40)],
        [("C", 128, 72), ("A", 300, 1), ("B", 181, 1), ("D", 40, 1)],
    ]
    done = {"A": 301, "B": 182, "C": 200, "D": 41}
    for _ in range(8):
        steps.append([(s, done[s], 1) for s in ("A", "B", "C", "D")])
        for s in done:
            done[s] += 1
    return seqs, steps


def make(args):
    from transformers import AutoConfig, AutoModelForCausalLM
    os.makedirs(args.model, exist_ok=True)
    with open(args.config) as f:
        raw = json.load(f)
    config = AutoConfig.for_model(**raw)
    torch.manual_seed(args.seed)
    t0 = time.time()
    with torch.device("cuda"):
        model = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16, attn_implementation="sdpa")
    model.eval()
    if args.embed_std is not None:
        # Optional: larger token embeddings keep token identity in the residual stream, so next-token
        # distributions are peaked instead of the near-uniform ones of transformers' default init.
        with torch.no_grad():
            model.get_input_embeddings().weight.normal_(0, args.embed_std)
    model.save_pretrained(args.model)
    rotary = model.model.rotary_emb.inv_freq
    seqs, steps = schedule(config.vocab_size, torch.Generator().manual_seed(args.seed))
    rows, rows_f32_head = [], []
    head = model.get_output_embeddings().weight.float()
    with torch.no_grad():
        for step in steps:
            for name, start, count in step:
                ids = torch.tensor([seqs[name][: start + count]], device="cuda")
                hidden = model.model(ids).last_hidden_state[0, -1]  # after the final norm
                rows.append(model.get_output_embeddings()(hidden).float())
                # The same bf16 forward, but lm_head evaluated in f32: transformers' bf16 logits are rounded
                # to 8 bits of mantissa, which ties near-equal top tokens of these flat random models.
                rows_f32_head.append(hidden.float() @ head.T)
    torch.save({"bf16": torch.stack(rows).cpu(), "f32head": torch.stack(rows_f32_head).cpu()},
               os.path.join(args.model, "reference-logits.pt"))
    with open(os.path.join(args.model, "schedule.json"), "w") as f:
        json.dump({"seqs": seqs, "steps": steps, "ropeFrequencies": "bf16" if rotary.dtype == torch.bfloat16 else "f32"}, f)
    print(f"made {args.model}: {sum(p.numel() for p in model.parameters()) / 1e9:.2f} B params, "
          f"inv_freq {rotary.dtype}, {len(rows)} reference rows, {time.time() - t0:.1f} s", flush=True)


def metrics(ref, got):
    p_log = F.log_softmax(ref, dim=-1)
    q_log = F.log_softmax(got, dim=-1)
    kl = (p_log.exp() * (p_log - q_log)).sum(-1)
    picked = got.argmax(-1)
    top1 = (ref.argmax(-1) == picked).double()
    # Ferrum's argmax is among the reference's maxima (bf16 logits tie exactly at the top).
    top1_ties = (ref.gather(-1, picked[:, None])[:, 0] == ref.max(-1).values).double()
    sorted_ref = ref.sort(-1, descending=True).values
    max_err = (ref - got).abs().max(-1).values / (ref.max(-1).values - ref.min(-1).values)
    return {"meanKL": kl.mean().item(), "maxKL": kl.max().item(), "top1": top1.mean().item(),
            "top1WithTies": top1_ties.mean().item(), "maxAbsErrOverRange": max_err.max().item(),
            "minTop2Margin": (sorted_ref[:, 0] - sorted_ref[:, 1]).min().item()}


def compare(args):
    refs = torch.load(os.path.join(args.model, "reference-logits.pt"))
    shape = refs["bf16"].shape
    got = torch.from_numpy(__import__("numpy").fromfile(args.ferrum, dtype="float32")).double().view(shape)
    result = {"model": os.path.basename(args.model.rstrip("/")), "rows": shape[0],
              "vsTransformersF32Head": metrics(refs["f32head"].double(), got),
              "vsTransformersBf16Logits": metrics(refs["bf16"].double(), got)}
    main = result["vsTransformersF32Head"]
    ok = main["meanKL"] < 1e-3 and main["top1"] >= 0.99
    print(json.dumps(result), "PASS" if ok else "FAIL", flush=True)
    with open(args.results, "a") as f:
        f.write(json.dumps({**result, "pass": ok}) + "\n")
    return ok


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("phase", choices=["make", "compare"])
    parser.add_argument("--config")
    parser.add_argument("--model", required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--embed-std", type=float, default=None)
    parser.add_argument("--ferrum")
    parser.add_argument("--results")
    args = parser.parse_args()
    if args.phase == "make":
        make(args)
    else:
        sys.exit(0 if compare(args) else 1)
