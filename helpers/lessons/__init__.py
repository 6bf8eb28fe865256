"""One module per notebook (``nbNN_<its name>``): its bookkeeping, kept out of its lessons. Set-up
takes the parameters by name and returns a typed object; ``record`` takes named values and returns
one ``Record``. A lesson module imports the toolkit and the data layer, never another lesson."""
