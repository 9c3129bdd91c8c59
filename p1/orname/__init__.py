"""O/R names (X.402 clause 18, X.411 clause 18.5): the model, its text forms and its BER.

The public face is :mod:`p1.mts.orname`; these modules are its parts, so that a reader
of names in text (the configuration) need not load the BER codec.
"""
