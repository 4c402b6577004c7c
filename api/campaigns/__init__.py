"""The campaigns domain of the API: create, browse, edit and report measurement campaigns."""
