"""Pieces of scripts/gen_djl_options.py: reading djl-serving's sources without running them.

- ``repository``: git plumbing and the release branches;
- ``evaluation``: what the source alone fixes (Enum members, constants, messages);
- ``validators``: what a validator raises or warns about, under which conditions;
- ``classes``: the pydantic classes, their fields, config and ``__pydantic_extra__`` reads;
- ``recommender``: LmiConfigRecommender.java, read with regular expressions.

Stdlib only.
"""
