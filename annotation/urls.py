from django.urls import path

from annotation import views

app_name = "annotation"
urlpatterns = [
    path("", views.my_work, name="my-work"),
    path("overview/<slug:slug>/", views.overview, name="overview"),
    path("overview/<slug:slug>/close/", views.campaign_close_view, name="close"),
    path("overview/<slug:slug>/guidelines/", views.campaign_guidelines_view, name="guidelines-edit"),
    path("preferences/", views.preferences_view, name="preferences"),
    path("<slug:slug>/", views.campaign_resume, name="resume"),
    path("<slug:slug>/item/<int:position>/", views.item, name="item"),
    path("<slug:slug>/item/<int:position>/skip/", views.item_skip, name="skip"),
    path("<slug:slug>/items/", views.item_list, name="items"),
    path("<slug:slug>/undo/", views.answer_undo, name="undo"),
    path("<slug:slug>/guidelines/", views.guidelines, name="guidelines"),
    path("<slug:slug>/crisis/", views.crisis, name="crisis"),
    path("<slug:slug>/review/", views.review, name="review"),
    path("<slug:slug>/finish-phase1/", views.phase1_finish, name="phase1-finish"),
    path("<slug:slug>/submit/", views.submit, name="submit"),
    path("<slug:slug>/export/", views.export, name="export"),
]
