"""The `TEA` flake8 plugin and its rules (`plugin`, `rules`, `docs`, `sarif`, `sarif_format`)
over the analysis engine (`engine`), and the miner (`mine`)."""
