"""``python -m pipelines.cli`` = ``pitwatch``."""
from pipelines.cli import main

if __name__ == "__main__":  # child processes started by "spawn" import this module again
    main()
