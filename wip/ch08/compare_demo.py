#| demo
import json  # noqa: E402

import matplotlib.pyplot as plt  # noqa: E402

places = [Path("../runs/finetune/comparison.json"), Path("runs/finetune/comparison.json")]  # notebooks/ or the root
found = next((p for p in places if p.exists()), None)
if found is None:
    print("No runs/finetune/comparison.json yet: `make pretrain`, then `make finetune-compare`, in the repository "
          "root. The figures measured when this chapter was written are in the text below.")
else:
    rows = json.loads(found.read_text(encoding="utf-8"))
    print(comparison_table(rows))
    plot_comparison(rows)
    plt.show()
