from django.urls import path

from items import api

urlpatterns = [
    path("item-sets/", api.ItemSetListApi.as_view(), name="api-item-sets"),
    path("item-sets/import/", api.ItemImportApi.as_view(), name="api-item-import"),
]
