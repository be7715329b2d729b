"""``python -m lmi_config``."""

from lmi_config.cli import main

main()
