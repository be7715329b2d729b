"""Fixes as data: the edits a finding carries, located in the file that holds the key, judged
before the finding is emitted, and applied by ``lint --fix``.

``edits`` holds the line edits and the key-level changes (set, remove, rename); ``fileformat``
the fixers of the format rules (line edits); ``proposals`` the changes the semantic rules
propose, drawn from the judge's own searches; ``locate`` turns changes into line edits in
serving.properties, env files and Environment JSON; ``judge`` lints the configuration with a fix
applied and keeps only fixes that remove their finding and add no error.
"""
