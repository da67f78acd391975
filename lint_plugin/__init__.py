"""Static analysis of TE's attention selector and the `TEA` flake8 plugin."""
