"""The README's `judgecards estimate` example: a biased fake judge, 300 items, 60 labelled.

The fake judge (tests/builders.py's ``lenient``: it calls a partly right answer
right) judges 300 items, a third of each kind, through the real OpenAI SDK over a scripted
transport; 60 items drawn at random (seed 0) get their true labels; the table is
``calibration.estimate``'s.

    .venv/bin/python -m bench.estimate_example
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import numpy as np

import calibration
from tests.builders import MODEL, judged_db, write_labels


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["JUDGECARDS_DB"] = str(Path(tmp) / "judgecards.db")  # never the working dir's
        db, order = judged_db(Path(tmp), n=300)
        labelled = [order[i] for i in np.random.default_rng(0).choice(300, 60, replace=False)]
        calibration.import_labels(
            write_labels(Path(tmp) / "labels.csv", labelled), labeler="a", db=db
        )
        print(calibration.estimate(db, card="reference", model=MODEL).as_text())


if __name__ == "__main__":
    main()
