"""``python -m lmi_config``."""

from lmi_config.launch import main

main()
