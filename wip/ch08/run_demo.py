#| demo
import tempfile  # noqa: E402

import torch  # noqa: E402

cfg = FinetuneConfig(task="sentiment", init="minilm", epochs=1, batch_size=16, learning_rate=1e-4, limit_train=640,
                     limit_eval=400, out_dir=str(Path(tempfile.mkdtemp()) / "sentiment"))
result = train(cfg, progress=True)
print(f"dev accuracy after 1 epoch: {result['dev']['accuracy']:.3f}; test accuracy: {result['test']['accuracy']:.3f} "
      f"(the majority class, fresh, is 56% of the test snippets); {result['seconds']:.0f} s")
model = TASKS["sentiment"].model_class.from_pretrained(result["checkpoint"]).eval()
tokenizer = BertTokenizer.from_pretrained(result["checkpoint"])
for text in ["A gorgeous, moving film with a terrific cast.", "Two hours of my life I will never get back.",
             "Not as bad as I feared, but not good either.", "The plot is thin, yet the actors make it sing."]:
    batch = collate(sentiment_features(tokenizer, [(text, 0)], cfg))
    with torch.no_grad():
        p = model(batch["input_ids"], batch["attention_mask"]).logits.softmax(-1)[0]
    print(f"{p[1]:.2f} fresh  {text}")
