"""`python -m gpuq` runs the CLI."""

from gpuq.cli.main import main

if __name__ == "__main__":
    main()
