"""libcst codemod that inserts the registry's guards into TE's attention selector."""
