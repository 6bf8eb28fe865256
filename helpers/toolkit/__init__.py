"""Pieces a user could take into a project of their own: the capture guard, the loaders and sharded
feeds, the harness that times ways against each other, the checkpoints, the hardware readings, the
charts. They import the data layer (``helpers.data``), never a notebook's bookkeeping
(``helpers.lessons``)."""
