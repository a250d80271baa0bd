"""``python -m pitwatch.cli`` = ``pitwatch``."""
from pitwatch.cli import main

if __name__ == "__main__":  # child processes started by "spawn" import this module again
    main()
