# Thin aliases for the two commands in the README; dev.py does the work.
PYTHON ?= python3

.PHONY: book test
book:
	$(PYTHON) dev.py book
test:
	$(PYTHON) dev.py test
