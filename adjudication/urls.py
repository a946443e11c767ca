from django.urls import path

from adjudication import views

app_name = "adjudication"
urlpatterns = [
    path("", views.campaign_list, name="campaigns"),
    path("<slug:slug>/", views.queue_page, name="queue"),
    path("<slug:slug>/agreement/", views.agreement_page, name="agreement"),
    path("<slug:slug>/agreement.csv", views.agreement_csv, name="agreement-csv"),
    path("<slug:slug>/queue.csv", views.queue_csv, name="queue-csv"),
    path("<slug:slug>/items/<int:item_id>/", views.item_page, name="item"),
    path("<slug:slug>/items/<int:item_id>/next/", views.next_page, name="next"),
]
