"""``python -m judgecards``."""

from judgecards.cli import main

if __name__ == "__main__":
    main()
